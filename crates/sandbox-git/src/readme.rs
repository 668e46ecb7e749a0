//! Runs the README's example as a doctest, so it cannot rot.

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
