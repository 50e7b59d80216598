//! POSIX timers (step 2).
