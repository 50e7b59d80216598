//! Load generators (step 5).
