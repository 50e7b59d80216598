//! Devices: the RTC (realfeel's interrupt source), the disk and its request queue, 2.6's
//! anticipatory I/O scheduler, and 6.x's multi-queue block layer.
pub mod as_iosched;
pub mod blk_mq;
pub mod disk;
pub mod rtc;
