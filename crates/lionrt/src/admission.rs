//! `lionrt admission check`: audit an MCP server's tools before registering them.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::{Mutex, mpsc};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use mcp_admission::Policy;
use mcp_admission::batch::{Checker, OutputFormat, RecordBatch, Tally, ToolResult};

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
    /// Threads judging records (0: one per core, at most 8; at most 64).
    /// The output is in input order whatever the number.
    #[arg(long, default_value_t = 0)]
    jobs: usize,
    /// The rules: `strict` (the default) adds, beyond lionagi's, a denial
    /// of a tool that says it runs code and leaves the code free
    /// (`code-execution-with-free-input`); `original` gives lionagi
    /// 0.36.0's verdicts.
    #[arg(long, value_enum, default_value_t = PolicyArg::Strict)]
    policy: PolicyArg,
    /// The original's verdicts: the same as `--policy original`.
    #[arg(long, conflicts_with = "policy")]
    compat: bool,
}

/// The policy of `--policy` and `--compat`.
pub(crate) fn policy_of(policy: PolicyArg, compat: bool) -> Policy {
    match (compat, policy) {
        (true, _) | (false, PolicyArg::Original) => Policy::Original,
        (false, PolicyArg::Strict) => Policy::Strict,
    }
}

/// The admission policies of `admission check`, `mcp ls|audit|call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PolicyArg {
    /// lionagi 0.36.0's verdicts plus the code-execution rule.
    Strict,
    /// lionagi 0.36.0's verdicts.
    Original,
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

/// Input read at once (a piece that stays in cache while its records are
/// split, copied and parsed).
const READ_CHUNK: usize = 1 << 16;

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
    let (input, label): (Box<dyn Read>, String) = if args.input.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), "stdin".to_owned())
    } else {
        match std::fs::File::open(&args.input) {
            Ok(f) => (Box::new(f), args.input.display().to_string()),
            Err(e) => return Ok(unreadable(format!("reading {}: {e}", args.input.display()))),
        }
    };
    let policy = policy_of(args.policy, args.compat);
    let checker = Checker::new(format, Some(&label)).with_policy(policy);
    let stdout = std::io::stdout().lock();
    // Parsing and judging run on every core; reading, splitting and
    // writing (in input order) stay on this thread.
    let workers = match args.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        n => n.min(64),
    };
    let (tally, read_error) = if workers > 1 {
        check_parallel(input, stdout, checker, format, workers)?
    } else {
        check_serial(input, stdout, checker)?
    };
    if let Some(e) = read_error {
        // What was judged so far is printed; the batch is unreadable.
        return Ok(unreadable(format!("reading {label}: {e}")));
    }
    Ok(ExitCode::from(u8::try_from(tally.exit_code()).unwrap_or(2)))
}

/// Reads the next piece of input; `Ok(0)` at its end.
fn read_some(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Judges on this thread alone.
fn check_serial(
    mut input: Box<dyn Read>,
    mut stdout: impl Write,
    mut checker: Checker,
) -> Result<(Tally, Option<std::io::Error>)> {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut rendered = String::with_capacity(CHUNK);
    loop {
        let n = match read_some(&mut input, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                stdout.write_all(rendered.as_bytes())?;
                stdout.flush()?;
                return Ok((checker.finish_rendered(&mut String::new()), Some(e)));
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
    Ok((tally, None))
}

/// A batch of records for a worker, numbered in input order.
type Job = (u64, RecordBatch);

/// What a worker made of a batch.
enum Judged {
    /// JSON Lines, rendered by the worker, with its counts.
    Jsonl(String, Tally),
    /// Results for this thread to render (table, SARIF).
    Results(Vec<ToolResult>),
}

/// A worker's answer: the batch number, its verdicts and the emptied batch
/// (its buffers are reused for a later one).
type Done = (u64, Judged, RecordBatch);

/// Input read at once by the parallel reader: a batch is what one read
/// completes (a record larger than this travels alone).
const PARALLEL_CHUNK: usize = 1 << 17;

/// Splits here, judges (and renders JSON Lines) on `workers` threads,
/// writes here in input order. Memory stays flat: at most `2 * workers`
/// batches wait for a worker, and results are written as soon as their
/// turn comes.
fn check_parallel(
    mut input: Box<dyn Read>,
    mut stdout: impl Write,
    mut checker: Checker,
    format: OutputFormat,
    workers: usize,
) -> Result<(Tally, Option<std::io::Error>)> {
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(2 * workers);
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let job_rx = &job_rx;
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                loop {
                    // The lock is held only to take the next batch.
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((seq, mut records)) = job else { return };
                    let judged = if format == OutputFormat::Jsonl {
                        let mut out = String::with_capacity(records.len() * 64);
                        let tally = records.judge_jsonl(&mut out);
                        Judged::Jsonl(out, tally)
                    } else {
                        Judged::Results(records.judge(format))
                    };
                    records.clear();
                    if done_tx.send((seq, judged, records)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let mut order = InOrder::default();
        let mut rendered = String::with_capacity(CHUNK);
        let mut buf = vec![0u8; PARALLEL_CHUNK];
        let mut batch = RecordBatch::new();
        let mut read_error = None;
        let outcome = (|| -> Result<()> {
            loop {
                let n = match read_some(&mut input, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        read_error = Some(e);
                        break;
                    }
                };
                checker.split_batch(&buf[..n], &mut batch);
                order.send(&job_tx, &mut batch)?;
                order.drain(&done_rx, &mut checker, &mut rendered, false);
                if rendered.len() >= CHUNK / 2 {
                    stdout.write_all(rendered.as_bytes())?;
                    rendered.clear();
                }
            }
            if read_error.is_none() {
                checker.split_finish_batch(&mut batch);
            }
            order.send(&job_tx, &mut batch)?;
            Ok(())
        })();
        // No more work: the workers end once the queue is empty.
        drop(job_tx);
        order.drain(&done_rx, &mut checker, &mut rendered, true);
        outcome?;
        let tally = if read_error.is_some() {
            checker.finish_rendered(&mut String::new())
        } else {
            checker.finish_rendered(&mut rendered)
        };
        stdout.write_all(rendered.as_bytes())?;
        stdout.flush()?;
        Ok((tally, read_error))
    })
}

/// Hands batches to the workers and puts their results back in order.
#[derive(Default)]
struct InOrder {
    /// The next batch number to hand out.
    sent: u64,
    /// The next batch number to render.
    next: u64,
    /// Results that came back before their turn.
    early: BTreeMap<u64, Judged>,
    /// Emptied batches, for reuse.
    spare: Vec<RecordBatch>,
}

impl InOrder {
    /// Hands out `batch` when it holds records (a spare takes its place).
    fn send(&mut self, jobs: &mpsc::SyncSender<Job>, batch: &mut RecordBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(batch, self.spare.pop().unwrap_or_default());
        jobs.send((self.sent, full))
            .map_err(|_| anyhow::anyhow!("admission workers stopped"))?;
        self.sent += 1;
        Ok(())
    }

    /// Renders every result whose turn has come; with `all`, waits until
    /// every batch handed out is back.
    fn drain(
        &mut self,
        done: &mpsc::Receiver<Done>,
        checker: &mut Checker,
        out: &mut String,
        all: bool,
    ) {
        loop {
            while let Some(judged) = self.early.remove(&self.next) {
                match judged {
                    Judged::Jsonl(text, tally) => checker.add_jsonl(tally, &text, out),
                    Judged::Results(results) => {
                        for r in &results {
                            checker.render(r, out);
                        }
                    }
                }
                self.next += 1;
            }
            if self.next == self.sent {
                return;
            }
            let received = if all {
                done.recv().ok()
            } else {
                done.try_recv().ok()
            };
            let Some((seq, judged, spare)) = received else {
                return;
            };
            self.early.insert(seq, judged);
            // A few spares are enough; one grown by a huge record is dropped.
            if self.spare.len() < 4 && spare.byte_capacity() <= 2 * PARALLEL_CHUNK {
                self.spare.push(spare);
            }
        }
    }
}
