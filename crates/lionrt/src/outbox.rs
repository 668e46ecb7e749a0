//! `lionrt outbox ...`: the durable dispatch outbox from the command line
//! (the original's `li dispatch` verbs: ls, show, ack, retry, purge, plus
//! enqueue, deliver and sweep), on either store: every verb is written
//! once over [`OutboxStore`], and `--db` picks the SQLite file's outbox or
//! a PostgreSQL database's (`FOR UPDATE SKIP LOCKED` claims, so scanners on
//! several hosts share it).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ::outbox::{
    DispatchRow, DispatchStatus, ExecTransport, ListQuery, NewDispatch, OutboxStore, ReviveOptions,
    ReviveSelection, ScanConfig, ScanReport, SystemClock, Template, ack_dispatch,
    deliver_due_concurrent, enqueue_dispatch, purge_dispatch, purge_dispatches, retention_sweep,
    revive_dispatches,
};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use lifecycle_core::Actor;
use serde_json::{Value, json};
use state_postgres::{DueListener, PgOutbox};
use state_sqlite::SqliteOutbox;

use crate::notify_wiring::RefreshOutcomes;
use crate::out;
use crate::state::{open_store, parse_actor, print_history};

/// Exit code of a partial retry (some rows were not revived).
const EXIT_PARTIAL: u8 = 3;

#[derive(Debug, Subcommand)]
pub(crate) enum OutboxCmd {
    /// List outbox rows, oldest first.
    #[command(visible_alias = "list")]
    Ls {
        /// Only rows in this status (pending, delivering, delivered, acked, dead_letter, expired).
        #[arg(long)]
        status: Option<String>,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Show one row and its status history.
    Show {
        /// The dispatch id.
        id: String,
    },
    /// Queue a notification for delivery (idempotent on --dedup-key).
    ///
    /// The command template follows `--`; its elements `{payload}`,
    /// `{deliver_to}`, `{id}` and `{attempt}` are each replaced by one whole
    /// argument (never spliced into a string, never given to a shell).
    Enqueue(EnqueueArgs),
    /// Acknowledge a pending or delivering row: it moves to acked and is
    /// never sent again.
    Ack {
        /// The dispatch id.
        id: String,
        /// Who acknowledges, as TYPE:ID.
        #[arg(long, default_value = "operator:lionrt")]
        actor: String,
    },
    /// Revive dead_letter or expired rows: back to pending with a fresh
    /// attempt budget (operator actors only: the policy's recovery edge).
    Retry(RetryArgs),
    /// Delete one row by id (any status), or rows by --status / --older-than
    /// (without --status only terminal rows). Every purge writes an audit row.
    Purge(PurgeArgs),
    /// Run one due-scan (or, with --watch, one every interval until SIGINT):
    /// claim each due row, run its command template once, record the result.
    Deliver(DeliverArgs),
    /// The retention sweep: delete terminal rows older than --older-than.
    Sweep {
        /// Age in seconds.
        #[arg(long)]
        older_than: u64,
    },
}

#[derive(Debug, Args)]
pub(crate) struct EnqueueArgs {
    /// The payload, handed to the template as one argument.
    payload: String,
    /// Idempotency key: enqueueing it again returns the first row.
    #[arg(long)]
    dedup_key: Option<String>,
    /// Destination, handed to the template as one argument.
    #[arg(long)]
    deliver_to: Option<String>,
    /// Sends allowed.
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    /// Wait for an ack after each send (re-send with backoff until acked).
    #[arg(long)]
    ack_required: bool,
    /// Give up (status expired) this many seconds from now.
    #[arg(long)]
    expires_in: Option<u64>,
    /// Who enqueues, as TYPE:ID.
    #[arg(long, default_value = "operator:lionrt")]
    actor: String,
    /// Enqueue the row with no command of its own: it is sent with the
    /// `--template` of the `outbox deliver` that claims it (a deliver
    /// without one fails it).
    #[arg(long)]
    default_template: bool,
    /// The command template (argv; program first), after `--`.
    #[arg(last = true)]
    template: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RetryArgs {
    /// The dispatch ids (or use --all).
    ids: Vec<String>,
    /// Revive every dead_letter and expired row (or only --status).
    #[arg(long, conflicts_with = "ids")]
    all: bool,
    /// With --all: only dead_letter or only expired.
    #[arg(long, requires = "all")]
    status: Option<String>,
    /// New deadline, seconds from now (default: none).
    #[arg(long)]
    expires_in: Option<u64>,
    /// Who revives, as TYPE:ID (the recovery edge is for operators).
    #[arg(long, default_value = "operator:lionrt")]
    actor: String,
}

#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// Delete this row, whatever its status.
    #[arg(conflicts_with_all = ["status", "older_than", "dry_run"])]
    id: Option<String>,
    /// Bulk: rows in exactly this status (in-flight statuses included).
    #[arg(long)]
    status: Option<String>,
    /// Bulk: rows last written more than this many seconds ago.
    #[arg(long)]
    older_than: Option<u64>,
    /// Bulk: report what would go, delete nothing (still audited).
    #[arg(long)]
    dry_run: bool,
    /// Who purges, as TYPE:ID.
    #[arg(long, default_value = "operator:lionrt")]
    actor: String,
}

#[derive(Debug, Args)]
pub(crate) struct DeliverArgs {
    /// Rows per scan.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Claim lease in seconds (a crashed scanner's rows wait this long).
    #[arg(long, default_value_t = 300)]
    lease_secs: u64,
    /// Per-send deadline in seconds (must be shorter than the lease).
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    /// Rows in flight at once (each still claimed, sent once and finished in
    /// its own transactions).
    #[arg(long, default_value_t = std::num::NonZeroUsize::MIN)]
    concurrency: std::num::NonZeroUsize,
    /// Scan every this many seconds until SIGINT. On PostgreSQL a scan
    /// also starts as soon as a row becomes due (an enqueue or reschedule
    /// on any host wakes it through LISTEN/NOTIFY).
    #[arg(long)]
    watch: Option<f64>,
    /// Who the scan's transitions are recorded as (default: scheduler:scheduler-tick).
    #[arg(long)]
    actor: Option<String>,
    /// The template for rows that carry none, after `--`.
    #[arg(last = true)]
    template: Vec<String>,
}

fn status(text: Option<&str>) -> Result<Option<DispatchStatus>> {
    text.map(|s| s.parse::<DispatchStatus>().map_err(anyhow::Error::from))
        .transpose()
}

fn template(argv: Vec<String>) -> Result<Option<Template>> {
    if argv.is_empty() {
        return Ok(None);
    }
    Ok(Some(Template::new(argv)?))
}

fn now() -> i64 {
    state_sqlite::now_micros()
}

fn secs(s: u64) -> i64 {
    i64::try_from(s).unwrap_or(i64::MAX / 1_000_000) * 1_000_000
}

fn row_json(row: &DispatchRow) -> Value {
    serde_json::to_value(row).unwrap_or(Value::Null)
}

fn print_rows(json: bool, rows: &[DispatchRow]) {
    if json {
        out::json(&Value::Array(rows.iter().map(row_json).collect()));
        return;
    }
    out::line(format!(
        "{:<44} {:<11} {:>7} {:<4} {:<27} DEDUP_KEY",
        "ID", "STATUS", "ATTEMPT", "ACK", "NEXT"
    ));
    for r in rows {
        out::line(format!(
            "{:<44} {:<11} {:>7} {:<4} {:<27} {}",
            r.id,
            r.status,
            format!("{}/{}", r.attempt, r.max_attempts),
            if r.ack_required { "yes" } else { "no" },
            r.next_attempt_at.map_or_else(|| "-".into(), out::timestamp),
            r.dedup_key.as_deref().unwrap_or("-"),
        ));
    }
}

fn get<S: OutboxStore>(store: &S, id: &str) -> Result<DispatchRow> {
    store
        .get(id)?
        .with_context(|| format!("no dispatch {id:?}"))
}

pub(crate) fn run(db: &Path, json: bool, cmd: OutboxCmd) -> Result<ExitCode> {
    match crate::pg::url(db) {
        // Every move refreshes the notify outcome of a run whose durable
        // notification it is (see `notify_wiring`).
        Some(url) => run_on(
            &RefreshOutcomes(PgOutbox::new(crate::pg::open(&url)?)),
            json,
            cmd,
        ),
        None => run_on(
            &RefreshOutcomes(SqliteOutbox::new(open_store(db)?)),
            json,
            cmd,
        ),
    }
}

/// The outbox verbs on any store (a SQLite file or a PostgreSQL schema).
fn run_on<S>(store: &S, json: bool, cmd: OutboxCmd) -> Result<ExitCode>
where
    S: OutboxStore + Wake + Clone + Send + Sync + 'static,
{
    match cmd {
        OutboxCmd::Ls { status: s, limit } => {
            let rows = store.list(&ListQuery {
                status: status(s.as_deref())?,
                limit,
            })?;
            print_rows(json, &rows);
        }
        OutboxCmd::Show { id } => {
            let row = get(store, &id)?;
            let history = store.history(&id)?;
            if json {
                out::json(&json!({"dispatch": row_json(&row), "history": history}));
            } else {
                let text = serde_json::to_string_pretty(&row_json(&row))?;
                for line in text.lines() {
                    out::line(line);
                }
                print_history(false, &history);
            }
        }
        OutboxCmd::Enqueue(args) => {
            let mut new = NewDispatch::new(args.payload);
            new.dedup_key = args.dedup_key;
            new.deliver_to = args.deliver_to;
            new.max_attempts = args.max_attempts;
            new.ack_required = args.ack_required;
            new.expires_at = args.expires_in.map(|s| now().saturating_add(secs(s)));
            match (args.template.is_empty(), args.default_template) {
                (true, false) => bail!(
                    "no command to send it with: give the command after `--` \
                     (e.g. `lionrt outbox enqueue PAYLOAD -- /usr/bin/logger {{payload}}`), \
                     or --default-template to send it with `outbox deliver --template`"
                ),
                (false, true) => {
                    bail!("--default-template and a command after `--` exclude each other")
                }
                _ => {}
            }
            new.template = template(args.template)?;
            let out = enqueue_dispatch(store, &SystemClock, &new, &parse_actor(&args.actor)?)?;
            if json {
                out::json(&serde_json::to_value(&out)?);
            } else if out.created {
                out::line(format!("enqueued {}", out.id));
            } else {
                out::line(format!("already queued as {}", out.id));
            }
        }
        OutboxCmd::Ack { id, actor } => {
            let row = ack_dispatch(store, &id, &parse_actor(&actor)?)?;
            if json {
                out::json(&row_json(&row));
            } else {
                out::line(format!("{id}: {}", row.status));
            }
        }
        OutboxCmd::Retry(args) => return retry(store, json, args),
        OutboxCmd::Purge(args) => purge(store, json, args)?,
        OutboxCmd::Deliver(args) => deliver(store, json, args)?,
        OutboxCmd::Sweep { older_than } => {
            let n = retention_sweep(store, &SystemClock, Duration::from_secs(older_than))?;
            if json {
                out::json(&json!({"removed": n}));
            } else {
                out::line(format!("removed {n} terminal rows"));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn retry<S: OutboxStore>(store: &S, json: bool, args: RetryArgs) -> Result<ExitCode> {
    let selection = if args.all {
        ReviveSelection::All(status(args.status.as_deref())?)
    } else if args.ids.is_empty() {
        bail!("name the dispatch ids to retry, or pass --all");
    } else {
        ReviveSelection::Ids(args.ids)
    };
    let options = ReviveOptions {
        expires_at: args.expires_in.map(|s| now().saturating_add(secs(s))),
    };
    let revived = revive_dispatches(
        store,
        &SystemClock,
        &selection,
        &options,
        &parse_actor(&args.actor)?,
    )?;
    if json {
        out::json(&serde_json::to_value(&revived)?);
    } else {
        for r in &revived {
            match &r.detail {
                None => out::line(format!("{}: pending", r.id)),
                Some(why) => out::line(format!("{}: not revived ({why})", r.id)),
            }
        }
    }
    Ok(if revived.iter().all(|r| r.revived) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_PARTIAL)
    })
}

fn purge<S: OutboxStore>(store: &S, json: bool, args: PurgeArgs) -> Result<()> {
    let actor: Actor = parse_actor(&args.actor)?;
    if let Some(id) = args.id {
        let was = purge_dispatch(store, &id, &actor)?;
        if json {
            out::json(&json!({"id": id, "status": was}));
        } else {
            out::line(format!("purged {id} ({was})"));
        }
        return Ok(());
    }
    let before = args.older_than.map(|s| now().saturating_sub(secs(s)));
    let report = purge_dispatches(
        store,
        status(args.status.as_deref())?,
        before,
        args.dry_run,
        &actor,
    )?;
    if json {
        out::json(&serde_json::to_value(&report)?);
    } else {
        let verb = if report.dry_run {
            "would purge"
        } else {
            "purged"
        };
        out::line(format!("{verb} {} rows", report.ids.len()));
        for id in &report.ids {
            out::line(format!("  {id}"));
        }
    }
    Ok(())
}

fn print_report(json: bool, report: &ScanReport) {
    if json {
        out::json(&serde_json::to_value(report).unwrap_or(Value::Null));
    } else {
        out::line(format!(
            "examined {}, sent {} ok / {} failed, delivered {}, rescheduled {}, dead-lettered {}, expired {}, skipped {}",
            report.examined,
            report.sent_ok,
            report.send_failed,
            report.delivered,
            report.rescheduled,
            report.dead_lettered,
            report.expired,
            report.conflicts + report.missing
        ));
    }
}

/// How a `--watch` loop learns that a row became due between its scans.
trait Wake {
    /// A listener woken by the store, or `None` when the store cannot
    /// signal (the loop then scans every interval only).
    fn due_listener(&self) -> Result<Option<DueListener>>;
}

impl Wake for SqliteOutbox {
    fn due_listener(&self) -> Result<Option<DueListener>> {
        Ok(None)
    }
}

impl Wake for PgOutbox {
    fn due_listener(&self) -> Result<Option<DueListener>> {
        Ok(Some(self.listener()?))
    }
}

impl<S: Wake> Wake for RefreshOutcomes<S> {
    fn due_listener(&self) -> Result<Option<DueListener>> {
        self.0.due_listener()
    }
}

/// The shortest pause between two scans of a watch, so a due row another
/// host holds (each scan skips it) is not rescanned in a tight loop.
const WATCH_FLOOR: Duration = Duration::from_millis(200);

/// The longest single wait on the listener, so SIGINT is seen promptly.
const WATCH_SLICE: Duration = Duration::from_secs(1);

fn deliver<S>(store: &S, json: bool, args: DeliverArgs) -> Result<()>
where
    S: OutboxStore + Wake + Clone + Send + Sync + 'static,
{
    if args.timeout_secs >= args.lease_secs {
        bail!(
            "--timeout-secs ({}) must be shorter than --lease-secs ({}), or a slow send could be taken over",
            args.timeout_secs,
            args.lease_secs
        );
    }
    let transport = ExecTransport {
        default_template: template(args.template)?,
        timeout: Some(Duration::from_secs(args.timeout_secs)),
        live: None,
    };
    let config = ScanConfig {
        batch: args.batch,
        lease: Duration::from_secs(args.lease_secs),
        actor: args.actor.as_deref().map(parse_actor).transpose()?,
        ..ScanConfig::default()
    };
    let Some(interval) = args.watch else {
        let report =
            deliver_due_concurrent(store, &transport, &SystemClock, &config, args.concurrency)?;
        print_report(json, &report);
        return Ok(());
    };
    let interval = crate::seconds("--watch", interval)?;
    let workers = args.concurrency;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut listener = store.due_listener()?;
    runtime.block_on(async {
        let mut sigint = std::pin::pin!(tokio::signal::ctrl_c());
        loop {
            let (store, transport, config) = (store.clone(), transport.clone(), config.clone());
            let scan = tokio::task::spawn_blocking(move || {
                deliver_due_concurrent(&store, &transport, &SystemClock, &config, workers)
            });
            // A scan in progress finishes before the loop looks at SIGINT, so
            // no claim is left half-done by the operator's interrupt. A failed
            // scan (e.g. the database stayed locked) is reported and the watch
            // goes on: its claimed rows come back when their lease runs out.
            match scan.await? {
                Ok(report) => print_report(json, &report),
                Err(e) => out::error(&anyhow::Error::from(e).context("scan failed")),
            }
            let until = tokio::time::Instant::now() + interval;
            let floor = tokio::time::Instant::now() + WATCH_FLOOR.min(interval);
            tokio::select! {
                _ = &mut sigint => return Ok::<(), anyhow::Error>(()),
                () = tokio::time::sleep_until(floor) => {}
            }
            // Until the interval ends, or (PostgreSQL) a row becomes due.
            loop {
                let left = until.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                let Some(mut l) = listener.take() else {
                    tokio::select! {
                        _ = &mut sigint => return Ok(()),
                        () = tokio::time::sleep(left) => {}
                    }
                    break;
                };
                let slice = left.min(WATCH_SLICE);
                let wait = tokio::task::spawn_blocking(move || {
                    let due = l.wait_for_due(slice);
                    (l, due)
                });
                let (l, due) = tokio::select! {
                    _ = &mut sigint => return Ok(()),
                    r = wait => r?,
                };
                match due {
                    Ok(true) => {
                        listener = Some(l);
                        break;
                    }
                    Ok(false) => listener = Some(l),
                    // The listening connection failed: the watch goes on,
                    // scanning every interval.
                    Err(e) => out::error(
                        &anyhow::Error::from(e).context("due listener failed; polling instead"),
                    ),
                }
            }
        }
    })
}
