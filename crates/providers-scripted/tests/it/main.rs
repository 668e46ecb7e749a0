//! Integration tests of providers-scripted.

mod provider;
mod script;
