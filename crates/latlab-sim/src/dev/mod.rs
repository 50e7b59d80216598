//! Devices: the RTC (realfeel's interrupt source) and the IDE disk.
pub mod disk;
pub mod rtc;
