//! `lionrt serve`: the live web monitor (crate `web-monitor`) over the
//! store `--db` names. This module picks the concrete pieces: the
//! read-only source (a SQLite file or a PostgreSQL schema), the actions
//! (kill through `runner::kill_session`, the path `lionrt kill` takes;
//! outbox retry through `outbox::revive_dispatches`, the path of `lionrt
//! outbox retry`; both with the actor `operator:web:<peer>`), the
//! redaction of the CLI's secrets, and the listener.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use lifecycle_core::{Actor, ActorType, SessionRecorder};
use serde_json::Value;
use web_monitor::{ActionError, Actions, Config, Monitor, PostgresSource, Source, SqliteSource};

use crate::notify_wiring::RefreshOutcomes;
use crate::out;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. Loopback by default; any other address
    /// requires --token. Port 0 picks a free port (the address is printed).
    #[arg(long, default_value = "127.0.0.1:8765", value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// The access token: required off loopback. Clients send
    /// `Authorization: Bearer TOKEN`, or open a page once with
    /// `?token=TOKEN` (an HttpOnly cookie keeps it).
    #[arg(long, env = "LIONRT_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Open the store read-only and refuse every action.
    #[arg(long)]
    read_only: bool,
    /// Another Host header value to accept (repeatable), e.g. the name a
    /// proxy or a LAN address uses; the listen address and localhost are
    /// always accepted, anything else is refused (DNS rebinding).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_host: Vec<String>,
    /// Milliseconds between the change feed's reads of the store (one
    /// read for all open pages).
    #[arg(long, default_value_t = 250, value_name = "MS")]
    poll_ms: u64,
    /// Seconds between heartbeats on an idle event stream.
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    heartbeat: f64,
}

impl ServeArgs {
    /// Whether the store is opened read-only.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }
}

/// The actions over a writable store: kill (the session recorder) and
/// outbox retry (the outbox, refreshing a run's notify outcome as the CLI
/// does).
struct WebActions<R, O> {
    store: R,
    outbox: O,
}

impl<R, O> Actions for WebActions<R, O>
where
    R: SessionRecorder + Send + Sync + 'static,
    O: ::outbox::OutboxStore + Send + Sync + 'static,
{
    fn retry_outbox(&self, id: &str, actor: &str) -> Result<Value, ActionError> {
        let actor = Actor::new(ActorType::Operator, actor);
        let selection = ::outbox::ReviveSelection::Ids(vec![id.to_owned()]);
        let options = ::outbox::ReviveOptions { expires_at: None };
        let revived = ::outbox::revive_dispatches(
            &self.outbox,
            &::outbox::SystemClock,
            &selection,
            &options,
            &actor,
        )
        .map_err(|e| ActionError::Failed(format!("{e:#}")))?;
        let Some(r) = revived.first() else {
            return Err(ActionError::NotFound(format!("no dispatch {id:?}")));
        };
        if r.revived {
            serde_json::to_value(r).map_err(|e| ActionError::Failed(e.to_string()))
        } else {
            let why = r.detail.clone().unwrap_or_else(|| "not revived".into());
            if self.outbox.get(id).ok().flatten().is_none() {
                Err(ActionError::NotFound(format!("no dispatch {id:?}")))
            } else {
                Err(ActionError::Conflict(format!("{id}: {why}")))
            }
        }
    }

    fn kill(&self, session: &str, actor: &str) -> Result<Value, ActionError> {
        let actor = Actor::new(ActorType::Operator, actor);
        match runner::kill_session(
            &self.store,
            &crate::kill::procs(),
            session,
            Duration::from_secs(5),
            &actor,
        ) {
            Ok(report) => {
                serde_json::to_value(&report).map_err(|e| ActionError::Failed(e.to_string()))
            }
            Err(
                e @ (runner::Error::NoSuchSession { .. } | runner::Error::AmbiguousSession { .. }),
            ) => Err(ActionError::NotFound(e.to_string())),
            Err(
                e @ (runner::Error::AlreadyEnded { .. }
                | runner::Error::OtherHost { .. }
                | runner::Error::NoLegYet { .. }),
            ) => Err(ActionError::Conflict(e.to_string())),
            Err(e) => Err(ActionError::Failed(format!("{e:#}"))),
        }
    }
}

/// The secrets no page may show: the values `secrets.lookup` names and
/// every variable of this process whose name looks secret (what a leg's
/// redactor also holds), and the access token.
fn redactor(token: Option<&str>) -> cli_supervisor::Redactor {
    let mut r = crate::mcp_forward::inherited_secrets();
    for (name, value) in std::env::vars_os() {
        if cli_supervisor::looks_secret_name(&name.to_string_lossy()) {
            r.add(value);
        }
    }
    if let Some(t) = token {
        r.add(t);
    }
    r
}

pub(crate) fn run(db: &Path, json: bool, args: ServeArgs) -> Result<ExitCode> {
    let mut config = Config::new(args.listen);
    config.token = args.token.clone().filter(|t| !t.is_empty());
    config.read_only = args.read_only;
    config.allow_hosts = args.allow_host.clone();
    config.poll = Duration::from_millis(args.poll_ms.clamp(10, 60_000));
    config.heartbeat = crate::seconds("--heartbeat", args.heartbeat.clamp(0.5, 3600.0))?;
    config.redact = redactor(config.token.as_deref());
    // Refused before anything binds: off loopback without a token.
    config.check().map_err(anyhow::Error::msg)?;
    let (src, actions): (Arc<dyn Source>, Option<Arc<dyn Actions>>) = match crate::pg::url(db) {
        Some(url) => {
            let reader = crate::backend::Postgres::open(&url)?;
            let actions = if args.read_only {
                None
            } else {
                Some(Arc::new(WebActions {
                    store: crate::pg::open(&url)?,
                    outbox: RefreshOutcomes(state_postgres::PgOutbox::new(crate::pg::open(&url)?)),
                }) as Arc<dyn Actions>)
            };
            (Arc::new(PostgresSource::new(reader.into_store())), actions)
        }
        None => {
            let (engine, _conn) = crate::view::open_read(db)?;
            let actions = if args.read_only {
                None
            } else {
                Some(Arc::new(WebActions {
                    store: crate::state::open_store(db)?,
                    outbox: RefreshOutcomes(state_sqlite::SqliteOutbox::new(
                        crate::state::open_store(db)?,
                    )),
                }) as Arc<dyn Actions>)
            };
            (
                Arc::new(SqliteSource::new(engine, db.display().to_string())),
                actions,
            )
        }
    };
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("listening on {}", args.listen))?;
    listener.set_nonblocking(true)?;
    config.listen = listener.local_addr()?;
    let listen = config.listen;
    let monitor = Monitor::new(src, config, actions)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The address first (port 0 picked one), flushed: a caller waits for it.
    if json {
        out::json(&serde_json::json!({
            "url": format!("http://{listen}/"), "listen": listen.to_string(),
            "read_only": args.read_only, "token_required": args.token.is_some(),
        }));
    } else {
        out::line(format!("http://{listen}/"));
    }
    out::finish()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shutdown = async {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => return std::future::pending().await,
                };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        monitor.serve(listener, shutdown).await
    })?;
    Ok(ExitCode::SUCCESS)
}
