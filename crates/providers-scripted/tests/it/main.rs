//! Integration tests of providers-scripted.

mod first_output;
mod provider;
mod script;
