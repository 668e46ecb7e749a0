//! Integration tests of providers-claude: argv, stream parsing, runtime-only
//! fields and the first-output gate.

mod argv;
mod first_output;
mod mcp;
mod parse;
mod runtime;
