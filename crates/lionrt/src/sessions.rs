//! `lionrt sessions ls|show|messages`: reading back what runs recorded.
//!
//! Every verb opens the store read-only (a SQLite file, or a PostgreSQL
//! schema through a read-only engine) and accepts an id or a unique id
//! prefix (an ambiguous prefix is refused and its candidates named).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use lifecycle_core::{MessageRow, SessionFilter, SessionRow, StateReader};
use serde_json::{Value, json};

use crate::backend::Backend;
use crate::out;
use crate::view::{self, paint};

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCmd {
    /// List sessions, newest first: id, status, provider, model, age,
    /// messages and tokens.
    #[command(visible_alias = "list")]
    Ls {
        /// Only sessions in this status (e.g. running, completed, failed).
        #[arg(long, value_parser = session_status)]
        status: Option<String>,
        /// Only sessions created within this age: 90s, 30m, 2h, 7d, 1w.
        #[arg(long, value_parser = view::parse_age)]
        since: Option<Duration>,
        /// Only sessions not yet in a terminal status.
        #[arg(long)]
        open: bool,
        /// At most this many rows.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Show one session: its row, status history, token usage and message
    /// count.
    Show {
        /// Session id or unique prefix.
        id: String,
    },
    /// Print a session's recorded messages in order, one line each
    /// (`--json`: one JSON object per line).
    Messages {
        /// Session id or unique prefix.
        id: String,
        /// Keep printing new messages until the session reaches a terminal
        /// status (or Ctrl-C).
        #[arg(long, short)]
        follow: bool,
        /// How often --follow polls the store.
        #[arg(long, default_value = "500", value_name = "MILLISECONDS")]
        interval: u64,
        /// Print whole messages, not one cut line each.
        #[arg(long)]
        full: bool,
    },
}

/// A status of the session vocabulary.
pub(crate) fn session_status(text: &str) -> Result<String, String> {
    let policy = lifecycle_core::default_registry()
        .get("session")
        .map_err(|e| e.to_string())?;
    if policy.has_status(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "not a session status (one of: {})",
            policy.statuses().join(", ")
        ))
    }
}

pub(crate) fn run(db: &Path, json: bool, cmd: SessionsCmd) -> Result<ExitCode> {
    crate::backend::with_backend!(db, |b| read(b, json, cmd))
}

/// The verbs on either store.
fn read<B: Backend>(backend: &B, json: bool, cmd: SessionsCmd) -> Result<ExitCode> {
    let reader = backend.reader();
    match cmd {
        SessionsCmd::Ls {
            status,
            since,
            open,
            limit,
        } => {
            let mut filter = SessionFilter::all();
            filter.status = status;
            filter.since = since.map(view::micros_ago);
            filter.open_only = open;
            filter.limit = Some(limit);
            let rows = reader.sessions(&filter)?;
            print_sessions(json, &rows);
        }
        SessionsCmd::Show { id } => {
            let id = view::resolve_one(reader, "session", &id)?;
            let Some(row) = reader.session_row(&id)? else {
                anyhow::bail!("session {id:?} vanished while reading");
            };
            let history = reader.transitions("session", &id)?;
            let notify =
                crate::notify_wiring::outcome_in_metadata(backend.node_metadata(&id)?.as_deref());
            if json {
                out::json(&json!({"session": row, "history": history, "notify_outcome": notify}));
            } else {
                print_show(&row);
                if let Some(outcome) = &notify {
                    out::line(format!(
                        "notify     {}",
                        crate::notify_wiring::describe_outcome(outcome)
                    ));
                }
                out::line("");
                crate::state::print_history(false, &history);
            }
        }
        SessionsCmd::Messages {
            id,
            follow,
            interval,
            full,
        } => {
            let id = view::resolve_one(reader, "session", &id)?;
            let terminal = lifecycle_core::default_registry().get("session")?;
            let mut after = 0;
            loop {
                // The status is read before the batch: a session that was
                // terminal before the read has no message after it.
                let ended = !follow
                    || reader
                        .session_row(&id)?
                        .is_none_or(|s| terminal.is_terminal(&s.status));
                loop {
                    let batch = reader.messages(&id, after, 1000)?;
                    let Some(last) = batch.last() else { break };
                    after = last.seq;
                    for m in &batch {
                        print_message(json, full, m);
                    }
                }
                // A reader that went away ends the follow (out::finish
                // reports it).
                if ended || out::failed() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(interval.max(10)));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `in/out` tokens, or `-`.
pub(crate) fn tokens(row: &SessionRow) -> String {
    match (row.input_tokens, row.output_tokens) {
        (None, None) => "-".to_owned(),
        (i, o) => format!("{}/{}", i.unwrap_or(0), o.unwrap_or(0)),
    }
}

pub(crate) fn print_sessions(json: bool, rows: &[SessionRow]) {
    if json {
        out::json(&serde_json::to_value(rows).unwrap_or(Value::Null));
        return;
    }
    let colour = view::stdout_colour();
    out::line(format!(
        "{:<36} {:<16} {:<9} {:<20} {:>8} {:>6} {:>13}",
        "ID", "STATUS", "PROVIDER", "MODEL", "AGE", "MSGS", "TOKENS IN/OUT"
    ));
    for r in rows {
        let status = format!("{:<16}", r.status);
        out::line(format!(
            "{:<36} {} {:<9} {:<20} {:>8} {:>6} {:>13}",
            r.id,
            paint(colour, view::status_sgr(&r.status), &status),
            r.provider.as_deref().unwrap_or("-"),
            view::one_line(r.model.as_deref().unwrap_or("-"), 20),
            view::ago(r.created_at),
            r.messages,
            tokens(r)
        ));
    }
}

fn print_show(r: &SessionRow) {
    let opt = |v: Option<&str>| v.unwrap_or("-").to_owned();
    let num = |v: Option<i64>| v.map_or("-".to_owned(), |n| n.to_string());
    out::line(format!("session    {}", r.id));
    out::line(format!("status     {}", r.status));
    out::line(format!(
        "reason     {}{}",
        opt(r.reason_code.as_deref()),
        r.reason_summary
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    ));
    out::line(format!("kind       {}", opt(r.kind.as_deref())));
    out::line(format!("provider   {}", opt(r.provider.as_deref())));
    out::line(format!("model      {}", opt(r.model.as_deref())));
    out::line(format!("cwd        {}", opt(r.cwd.as_deref())));
    out::line(format!("pid        {}", num(r.pid)));
    out::line(format!("created    {}", out::timestamp(r.created_at)));
    out::line(format!(
        "ended      {}",
        r.ended_at.map_or("-".to_owned(), out::timestamp)
    ));
    out::line(format!(
        "tokens     {} in, {} out",
        num(r.input_tokens),
        num(r.output_tokens)
    ));
    out::line(format!(
        "cost       {}",
        // No cost reported is "unpriced", never $0: a CLI that gives no
        // price (codex, gemini) did not run for free.
        r.total_cost_usd
            .map_or("unpriced".to_owned(), |c| format!("${c:.4}"))
    ));
    out::line(format!("turns      {}", num(r.num_turns)));
    out::line(format!(
        "duration   {}",
        r.duration_ms
            .map_or("-".to_owned(), |ms| format!("{ms} ms"))
    ));
    out::line(format!("messages   {}", r.messages));
}

fn print_message(json: bool, full: bool, m: &MessageRow) {
    let content: Value =
        serde_json::from_str(&m.content).unwrap_or_else(|_| Value::String(m.content.clone()));
    if json {
        out::json(&json!({
            "seq": m.seq, "id": m.id, "role": m.role, "created_at": m.created_at,
            "branch_id": m.branch_id, "content": content,
        }));
        return;
    }
    let text = match &content {
        Value::Object(_) => view::describe(&content).1,
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = if full {
        text
    } else {
        view::one_line(&text, 160)
    };
    out::line(format!(
        "{} {:<11} {text}",
        out::timestamp(m.created_at),
        m.role
    ));
}
