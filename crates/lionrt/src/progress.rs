//! Live progress of `lionrt run`, fed by the runner's progress observer.
//!
//! - stderr a terminal: an `indicatif` status line (session, provider, pid,
//!   elapsed, events, tokens) with the agent's text and tool calls printed
//!   above it as they stream; colour unless `NO_COLOR`.
//! - stderr not a terminal: the same events as plain lines on stderr.
//! - `--json`: every event as one NDJSON line on stdout as it happens (the
//!   summary line follows at the end); nothing on stderr.
//! - `--quiet`: nothing but the final report.
//!
//! The status line is cleared by the run's terminal callback, before the
//! report is printed.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lifecycle_core::reasons::RunReasons;
use runner::{Progress, RunConfig, RunReport};
use serde_json::{Value, json};

use crate::view::{self, paint};

#[derive(Debug, Args)]
pub(crate) struct LiveArgs {
    /// Print nothing while the agent runs, only the final report.
    #[arg(long, short)]
    quiet: bool,
}

/// Exit status of a run ended by SIGINT (128 + 2).
pub(crate) const EXIT_SIGINT: u8 = 130;
/// Exit status of a run ended by SIGTERM (128 + 15).
pub(crate) const EXIT_SIGTERM: u8 = 143;

/// The process exit status for a finished run: 0 on success, 130/143 when
/// SIGINT/SIGTERM ended it, else 1.
pub(crate) fn exit_code(report: &RunReport) -> u8 {
    match report.verdict.reason_code {
        _ if report.ok => 0,
        RunReasons::CANCELLED_SIGINT => EXIT_SIGINT,
        RunReasons::CANCELLED_SIGTERM => EXIT_SIGTERM,
        _ => 1,
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Json,
    Plain { colour: bool },
    Bar { colour: bool },
}

struct Counters {
    events: u64,
    input_tokens: u64,
    output_tokens: u64,
    pid: Option<i32>,
}

struct Live {
    mode: Mode,
    session: String,
    provider: &'static str,
    bar: Option<ProgressBar>,
    counters: Mutex<Counters>,
}

/// Hooks live progress into `config` (the observer, and a terminal callback
/// that clears the status line before the report; an existing terminal
/// callback still runs after it).
pub(crate) fn attach(config: &mut RunConfig, json: bool, args: &LiveArgs) {
    let stderr_tty = std::io::stderr().is_terminal();
    let mode = if args.quiet {
        Mode::Quiet
    } else if json {
        Mode::Json
    } else if stderr_tty {
        Mode::Bar {
            colour: view::colour(true),
        }
    } else {
        Mode::Plain { colour: false }
    };
    if mode == Mode::Quiet {
        return;
    }
    let bar = matches!(mode, Mode::Bar { .. }).then(|| {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let live = Arc::new(Live {
        mode,
        session: config.session_id.clone(),
        provider: config.provider.name(),
        bar,
        counters: Mutex::new(Counters {
            events: 0,
            input_tokens: 0,
            output_tokens: 0,
            pid: None,
        }),
    });
    live.status();
    let observer = Arc::clone(&live);
    config.on_progress = Some(Arc::new(move |p: Progress<'_>| observer.on(p)));
    let previous = config.on_terminal.take();
    config.on_terminal = Some(Arc::new(move |report: &RunReport| {
        if let Some(bar) = &live.bar {
            bar.finish_and_clear();
        }
        if let Some(previous) = &previous {
            previous(report);
        }
    }));
}

impl Live {
    fn on(&self, progress: Progress<'_>) {
        match progress {
            Progress::Spawned { pid } => {
                if let Ok(mut c) = self.counters.lock() {
                    c.pid = Some(pid);
                }
                if let Mode::Plain { .. } = self.mode {
                    self.plain(&format!(
                        "[{}] {} started, pid {pid}",
                        self.session, self.provider
                    ));
                }
                if self.mode == Mode::Json {
                    crate::out::json(&json!({
                        "session": self.session, "event": {"type": "spawned", "pid": pid},
                    }));
                }
            }
            Progress::Event(event) => {
                let value = serde_json::to_value(event).unwrap_or(Value::Null);
                if let Ok(mut c) = self.counters.lock() {
                    c.events += 1;
                    if value.get("type").and_then(Value::as_str) == Some("usage") {
                        let n = |k: &str| value.get(k).and_then(Value::as_u64);
                        c.input_tokens = n("input_tokens").unwrap_or(c.input_tokens);
                        c.output_tokens = n("output_tokens").unwrap_or(c.output_tokens);
                    }
                }
                self.show(&value);
            }
            _ => {}
        }
        self.status();
    }

    /// Prints one event in the current mode.
    fn show(&self, value: &Value) {
        if self.mode == Mode::Json {
            crate::out::json(&json!({"session": self.session, "event": value}));
            return;
        }
        let (kind, text) = view::describe(value);
        // Usage only moves the counters; the status line shows it.
        if kind == "usage" && self.bar.is_some() {
            return;
        }
        let colour = match self.mode {
            Mode::Bar { colour } | Mode::Plain { colour } => colour,
            _ => false,
        };
        let (label, sgr) = match kind.as_str() {
            "text" => ("agent", "1"),
            "thinking" => ("thinking", "2"),
            "tool_use" => ("tool", "36"),
            "tool_result" => ("result", "2"),
            "error" => ("error", "31"),
            "final" => ("end", "32"),
            other => (other, "2"),
        };
        let line = format!(
            "{} {}",
            paint(colour, sgr, &format!("{label:>8}")),
            view::one_line(&text, 400)
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => self.plain(&line),
        }
    }

    fn plain(&self, line: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{line}");
    }

    /// Redraws the status line.
    fn status(&self) {
        let Some(bar) = &self.bar else { return };
        let Ok(c) = self.counters.lock() else { return };
        bar.set_message(format!(
            "{} · {} · pid {} · {} event(s) · tokens {}/{}",
            self.session,
            self.provider,
            c.pid.map_or("-".to_owned(), |p| p.to_string()),
            c.events,
            c.input_tokens,
            c.output_tokens
        ));
    }
}
