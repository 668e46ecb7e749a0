//! Pure lifecycle rules.
