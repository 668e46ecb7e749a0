//! `lionrt monitor [--watch]`: everything in flight (open sessions with
//! their age, pid, messages and tokens; open entities of every other type),
//! once or redrawn every interval, on a SQLite file or a PostgreSQL schema.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use lifecycle_core::{InFlight, StateReader};
use serde_json::json;

use crate::backend::Backend;
use crate::out;
use crate::view::{self, paint};

#[derive(Debug, Args)]
pub(crate) struct MonitorArgs {
    /// Redraw until interrupted (Ctrl-C); with --json, one JSON line per
    /// refresh.
    #[arg(long, short)]
    watch: bool,
    /// Seconds between refreshes with --watch.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    interval: f64,
    /// Stop after this many refreshes (--watch; 0 = never).
    #[arg(long, default_value_t = 0, hide = true)]
    count: u64,
}

pub(crate) fn run(db: &Path, json: bool, args: MonitorArgs) -> Result<ExitCode> {
    crate::backend::with_backend!(db, |b| watch(b, json, &args))
}

/// The monitor on either store.
fn watch<B: Backend>(backend: &B, json: bool, args: &MonitorArgs) -> Result<ExitCode> {
    let redraw = args.watch && std::io::stdout().is_terminal() && !json;
    // Clamped to 0.1 s .. 1 h; NaN is refused, not clamped.
    let interval = crate::seconds("--interval", args.interval.clamp(0.1, 3600.0))?;
    let mut drawn = 0u64;
    loop {
        let flight = backend.reader().in_flight()?;
        if json {
            out::json(&json!({
                "at": state_sqlite::now_micros(),
                "sessions": flight.sessions, "others": flight.others,
            }));
        } else {
            if redraw {
                // Home and clear, then the frame.
                out::line("\x1b[H\x1b[2J");
            } else if drawn > 0 {
                out::line("");
            }
            draw(&backend.location(), &flight);
        }
        drawn += 1;
        if !args.watch || (args.count > 0 && drawn >= args.count) || out::failed() {
            break;
        }
        std::thread::sleep(interval);
    }
    Ok(ExitCode::SUCCESS)
}

fn draw(location: &str, flight: &InFlight) {
    let colour = view::stdout_colour();
    out::line(format!(
        "{location} in flight at {} — {} session(s), {} other",
        out::timestamp(state_sqlite::now_micros()),
        flight.sessions.len(),
        flight.others.len()
    ));
    if !flight.sessions.is_empty() {
        out::line(format!(
            "{:<36} {:<12} {:<9} {:>8} {:>8} {:>6} {:>13} {:>9}",
            "SESSION", "STATUS", "PROVIDER", "PID", "AGE", "MSGS", "TOKENS IN/OUT", "IDLE"
        ));
        for s in &flight.sessions {
            let status = format!("{:<12}", s.status);
            out::line(format!(
                "{:<36} {} {:<9} {:>8} {:>8} {:>6} {:>13} {:>9}",
                s.id,
                paint(colour, view::status_sgr(&s.status), &status),
                s.provider.as_deref().unwrap_or("-"),
                s.pid.map_or("-".to_owned(), |p| p.to_string()),
                view::ago(s.created_at),
                s.messages,
                crate::sessions::tokens(s),
                view::ago(s.last_message_at.unwrap_or(s.updated_at)),
            ));
        }
    }
    if !flight.others.is_empty() {
        out::line(format!(
            "{:<14} {:<36} {:<16} {:>8}",
            "TYPE", "ID", "STATUS", "CHANGED"
        ));
        for e in &flight.others {
            out::line(format!(
                "{:<14} {:<36} {:<16} {:>8}",
                e.entity_type,
                e.id,
                e.status,
                view::ago(e.updated_at)
            ));
        }
    }
}
