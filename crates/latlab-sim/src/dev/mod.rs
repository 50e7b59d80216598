//! Devices: the RTC (realfeel's interrupt source), the disk and its request queue, and
//! 2.6's anticipatory I/O scheduler.
pub mod as_iosched;
pub mod disk;
pub mod rtc;
