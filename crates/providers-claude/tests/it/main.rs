//! Integration tests of providers-claude: argv and stream parsing.

mod argv;
mod parse;
