//! `lionrt admission check`: audit an MCP server's tools before registering them.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::Result;
use clap::{Args, Subcommand};
use mcp_admission::batch::{self, OutputFormat};

use crate::out;

#[derive(Debug, Subcommand)]
pub(crate) enum AdmissionCmd {
    /// Judge every tool of a `tools/list` result, a JSON array of tools, or
    /// JSON Lines of `{id?, name, description, input_schema | inputSchema}`.
    ///
    /// Exit status: 0 all admitted, 1 any denied, 2 unreadable input (the
    /// line or line:column is named).
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The input file, or `-` for standard input.
    #[arg(default_value = "-")]
    input: PathBuf,
    /// Output format: table (people), jsonl (one verdict per line), sarif (SARIF 2.1.0 for code scanning).
    #[arg(long, default_value = "table")]
    format: String,
}

fn unreadable(message: String) -> ExitCode {
    out::error(&anyhow::anyhow!(message));
    ExitCode::from(2)
}

pub(crate) fn run(json: bool, cmd: AdmissionCmd) -> Result<ExitCode> {
    let AdmissionCmd::Check(args) = cmd;
    let format_name = if json && args.format == "table" {
        "jsonl"
    } else {
        args.format.as_str()
    };
    let format = match OutputFormat::from_str(format_name) {
        Ok(f) => f,
        Err(e) => return Ok(unreadable(format!("{e}"))),
    };
    let (bytes, label) = if args.input.as_os_str() == "-" {
        let mut buf = Vec::new();
        if let Err(e) = std::io::stdin().lock().read_to_end(&mut buf) {
            return Ok(unreadable(format!("reading standard input: {e}")));
        }
        (buf, "stdin".to_owned())
    } else {
        match std::fs::read(&args.input) {
            Ok(b) => (b, args.input.display().to_string()),
            Err(e) => return Ok(unreadable(format!("reading {}: {e}", args.input.display()))),
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Ok(unreadable(format!(
                "{label}: not UTF-8 (at byte {})",
                e.utf8_error().valid_up_to()
            )));
        }
    };
    let entries = match batch::parse_tools(&text) {
        Ok(entries) => entries,
        Err(e) => return Ok(unreadable(format!("{label}: {e}"))),
    };
    let results = batch::check_tools(&entries);
    let rendered = batch::render(&results, format, Some(&label));
    out::line(rendered.trim_end());
    Ok(ExitCode::from(
        u8::try_from(batch::exit_code(&results)).unwrap_or(1),
    ))
}
