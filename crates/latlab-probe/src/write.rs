//! write(2) latency (step 3).
