//! Integration tests of providers-scripted.

mod first_output;
mod leg;
mod provider;
mod script;
