//! Integration tests of the conductor's decisions.

mod props;
mod schema;
