//! One module per built-in command of a script ([`super::script::CommandSpec`]), each citing
//! what it follows. A command's `refill` queues its next batch of work on the command
//! program's [`super::ops::Ops`] for batch `stage` (0, 1, ...) and says false when it has
//! nothing more to do; the shell ([`super::script`]) only sequences commands. The larger
//! programs live beside this folder: `stress-kernel` in [`super::stress`], `iozone` in
//! [`super::iozone`], `sysbench` in [`super::sysbench`], `cpu-hogs` in [`super::hogs`],
//! `video` in [`super::video`].

pub(crate) mod cat;
pub(crate) mod cvs;
pub(crate) mod dbench;
pub(crate) mod dd;
pub(crate) mod make;
pub(crate) mod memhog;
pub(crate) mod rm;
pub(crate) mod sync;
pub(crate) mod tar;
pub(crate) mod updatedb;
