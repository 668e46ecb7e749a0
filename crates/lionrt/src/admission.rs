//! `lionrt admission check`: audit an MCP server's tools before registering them.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use mcp_admission::batch::{Checker, OutputFormat};

use crate::out;

#[derive(Debug, Subcommand)]
pub(crate) enum AdmissionCmd {
    /// Judge every tool of a `tools/list` result, a JSON array of tools, or
    /// JSON Lines of `{id?, name, description, input_schema | inputSchema}`.
    ///
    /// The input is streamed (memory stays flat for any size). A record that
    /// cannot be judged is reported as an error record and the rest are
    /// judged. Exit status: 0 all admitted, 1 any denied, 2 any record (or
    /// the input itself) unreadable.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The input file, or `-` for standard input.
    #[arg(default_value = "-")]
    input: PathBuf,
    /// Output format (with --json, table becomes jsonl).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// The output formats of `admission check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// A table for people.
    Table,
    /// One verdict per line (JSON Lines).
    Jsonl,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

fn unreadable(message: String) -> ExitCode {
    out::error(&anyhow::anyhow!(message));
    ExitCode::from(2)
}

/// Read and write in pieces this large.
const CHUNK: usize = 1 << 20;

pub(crate) fn run(json: bool, cmd: AdmissionCmd) -> Result<ExitCode> {
    let AdmissionCmd::Check(args) = cmd;
    let format_name = match (json, args.format) {
        (true, Format::Table) | (_, Format::Jsonl) => "jsonl",
        (false, Format::Table) => "table",
        (_, Format::Sarif) => "sarif",
    };
    let format = match OutputFormat::from_str(format_name) {
        Ok(f) => f,
        Err(e) => return Ok(unreadable(format!("{e}"))),
    };
    let (mut input, label): (Box<dyn Read>, String) = if args.input.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), "stdin".to_owned())
    } else {
        match std::fs::File::open(&args.input) {
            Ok(f) => (Box::new(f), args.input.display().to_string()),
            Err(e) => return Ok(unreadable(format!("reading {}: {e}", args.input.display()))),
        }
    };
    let mut checker = Checker::new(format, Some(&label));
    let mut stdout = std::io::stdout().lock();
    let mut buf = vec![0u8; CHUNK];
    let mut rendered = String::with_capacity(CHUNK);
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // What was judged so far is printed; the batch is unreadable.
                let _ = stdout.write_all(rendered.as_bytes());
                return Ok(unreadable(format!("reading {label}: {e}")));
            }
        };
        checker.feed(&buf[..n], &mut rendered);
        if rendered.len() >= CHUNK / 2 {
            stdout.write_all(rendered.as_bytes())?;
            rendered.clear();
        }
    }
    let tally = checker.finish(&mut rendered);
    stdout.write_all(rendered.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::from(u8::try_from(tally.exit_code()).unwrap_or(2)))
}
