//! `lionrt run`'s terminal notification: after the run's terminal
//! transition commits, its envelope goes to the notify registry and the
//! configured `notify.on_terminal` handler runs; with durable delivery
//! configured the envelope is enqueued in the dispatch outbox instead and
//! delivered by a scan (one at the end of the run, `lionrt outbox deliver`
//! retries later). That scan sends only the rows this run enqueued; any
//! other due row is left to `lionrt outbox deliver` and the daemon.
//!
//! Settings come from three levels, highest first: `--notify-on-terminal`,
//! the workspace's `.lionagi/settings.yaml`, the global settings file.
//! `notify.durable: true` (project, else global) or `--notify-durable`
//! selects durable delivery. Nothing here can fail or delay the run: a
//! settings file that does not load, a refused value or a failed enqueue is
//! a warning on stderr and the run goes on.
//!
//! Durable delivery runs the same argv through the outbox's exec transport,
//! which gives the envelope as an argument (the transport's stdin is
//! null): an argv element `{payload}` is replaced by the envelope JSON, and
//! an argv without one gets it appended as its last argument.
//!
//! **The outcome on the run.** Once the run is over, its notify outcome is
//! written on its session, as the `notify_outcome` key of the session's
//! `node_metadata` (other keys are kept), so `lionrt sessions show` reads it
//! back on any store: the adapter's result (`ok`, `exit_code`, `reason`), a
//! refusal's reason (a notifier asked for and refused), or, with durable
//! delivery, the state of its dispatch (id, status, attempt and the row's
//! `updated_at`) after the end-of-run scan. A later scan that moves the
//! dispatch (`lionrt outbox deliver`, its `--watch`, `lionrt daemon
//! --outbox`, or an `outbox ack`/`retry`) refreshes that outcome through
//! [`RefreshOutcomes`], so a row delivered or dead-lettered after the run
//! shows as such on the run. Every write is one atomic key update
//! (`SessionRecorder::update_session_metadata`) that keeps a newer state:
//! an outcome for the same dispatch with a later `updated_at` is never
//! replaced by an older one, whichever process writes last.
//! Nothing configured, or the session excluded by the filter, writes
//! nothing: that absence tells the benign cases from a refusal. Like the
//! outcome itself, it carries no argument value. A direct adapter's raw
//! stderr is never quoted: it is captured to an owner-only file
//! (`notify/<session>.stderr.log` beside the SQLite file, or under the
//! default state directory for PostgreSQL) named by the outcome's
//! `stderr_path` and by the run's warning.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use lifecycle_core::{
    Actor, ActorType, MetadataUpdate, SessionRecorder, TerminalEvent, TerminalSink,
    TransitionRecord,
};
use notify::{
    Adapter, DEFAULT_BUDGET, NotifyOutcome, OutcomeSink, Registry, Resolution, RunNotify, RunScope,
    TerminalNotifier, install_for_run, resolve_on_terminal,
};
use outbox::{
    AuditRecord, DispatchMove, DispatchRow, DispatchStatus, Enqueued, ExecTransport, ListQuery,
    MoveOutcome, NewDispatch, OutboxStore, PurgeReport, PurgeSelection, ScanConfig, SystemClock,
    Template, deliver_ids, enqueue_dispatch,
};
use runtime_settings::{Settings, SettingsFile};
use serde_json::Value;
use state_postgres::{PgOutbox, PgStore};
use state_sqlite::{Engine, EngineConfig, SqliteOutbox, Store};
use tokio::runtime::Handle;

/// How long the end-of-run scan lets one send take.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// The `node_metadata` key holding the run's notify outcome.
pub(crate) const OUTCOME_KEY: &str = "notify_outcome";

/// Reason of a durable outcome whose dispatch could not be enqueued.
const ENQUEUE_FAILED: &str = "dispatch_enqueue_failed";
/// Reason of a durable outcome whose dispatch is not delivered yet (it
/// stays in the outbox for later scans).
const NOT_DELIVERED: &str = "dispatch_not_delivered";
/// Reason of a durable outcome whose dispatch ran out of attempts.
const DEAD_LETTERED: &str = "dispatch_dead_lettered";
/// Reason of a durable outcome whose dispatch passed its deadline unsent.
const EXPIRED: &str = "dispatch_expired";
/// The dedup key prefix of a run's durable terminal notification:
/// `notify.on_terminal:<entity type>:<entity id>:<transition id>`.
const DEDUP_PREFIX: &str = "notify.on_terminal:";

/// `lionrt run`'s notification flags.
#[derive(Debug, Args, Default)]
pub(crate) struct NotifyArgs {
    /// A per-run `notify.on_terminal` command (split by POSIX shell-word
    /// rules, never run by a shell); overrides the settings files.
    #[arg(long, value_name = "CMD")]
    notify_on_terminal: Option<String>,
    /// Deliver the terminal notification through the durable outbox.
    #[arg(long)]
    notify_durable: bool,
}

/// The notification settings of one run, resolved before it starts.
#[derive(Debug)]
pub(crate) struct Prepared {
    per_run: Option<Value>,
    project: Option<Value>,
    global: Option<Value>,
    durable: bool,
    /// The `--db` holding the outbox: a SQLite file or a PostgreSQL URL.
    outbox_db: Option<PathBuf>,
    session: String,
}

/// Reads the settings (never failing: a file that does not load is a
/// warning and counts as absent).
pub(crate) fn prepare(
    args: &NotifyArgs,
    workspace: &Path,
    outbox_db: Option<PathBuf>,
    session: &str,
) -> Prepared {
    let project = load(&SettingsFile::at(
        workspace.join(".lionagi").join("settings.yaml"),
    ));
    let global = SettingsFile::locate().and_then(|f| load(&f));
    let notify_of = |s: &Option<Settings>| s.as_ref().and_then(|s| s.section("notify")).cloned();
    let (project, global) = (notify_of(&project), notify_of(&global));
    let on_terminal = |n: &Option<Value>| {
        n.as_ref()
            .and_then(|n| n.get("on_terminal"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let durable_in = |n: &Option<Value>| n.as_ref().and_then(|n| n.get("durable")).cloned();
    let durable = args.notify_durable
        || match durable_in(&project).or_else(|| durable_in(&global)) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => {
                warn("notify.durable is not a boolean; delivering directly");
                false
            }
        };
    Prepared {
        per_run: args.notify_on_terminal.clone().map(Value::String),
        project: on_terminal(&project),
        global: on_terminal(&global),
        durable,
        outbox_db,
        session: session.to_owned(),
    }
}

fn load(file: &SettingsFile) -> Option<Settings> {
    match file.load() {
        Ok(settings) => Some(settings),
        Err(error) => {
            warn(&format!("settings not used for notify: {error}"));
            None
        }
    }
}

fn warn(message: &str) {
    use std::io::Write;
    tracing::debug!("{message}");
    let _ = writeln!(std::io::stderr().lock(), "warning: {message}");
}

/// The run's outcome record: kept in memory, reported at the end and then
/// written on the session; the adapter's raw stderr goes to `stderr`.
#[derive(Debug, Default)]
struct Outcome {
    recorded: Mutex<Option<NotifyOutcome>>,
    stderr: Option<PathBuf>,
}

impl OutcomeSink for Outcome {
    fn stderr_path(&self) -> Option<PathBuf> {
        let path = self.stderr.clone()?;
        let dir = path.parent()?;
        // Owner-only from creation on, like the file itself.
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
        match made {
            Ok(()) => Some(path),
            Err(error) => {
                tracing::warn!(%error, dir = %dir.display(), "notify stderr directory not created; stderr not captured");
                None
            }
        }
    }

    fn record(&self, outcome: &NotifyOutcome) -> Result<(), notify::Error> {
        *lock(&self.recorded) = Some(outcome.clone());
        Ok(())
    }
}

/// Where the adapter's raw stderr of `session` is captured (mode 0600, in a
/// 0700 directory): `notify/<session>.stderr.log` next to the SQLite file,
/// or under the default state directory for a PostgreSQL `--db`. A session
/// id with characters outside `[A-Za-z0-9._-]` has them replaced and a hash
/// of the id appended, so no id can name a path elsewhere.
fn stderr_file(db: Option<&Path>, session: &str) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    let base = match db {
        Some(db) if !crate::dbpath::is_url(db) => db.to_owned(),
        _ => crate::dbpath::default_db(),
    };
    let dir = match base.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join("notify"),
        _ => PathBuf::from("notify"),
    };
    let mut name: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name != session || name.starts_with('.') || name.is_empty() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        session.hash(&mut h);
        name = format!("_{name}-{:016x}", h.finish());
    }
    Some(dir.join(format!("{name}.stderr.log")))
}

/// The installed notification of one run.
pub(crate) struct Wiring {
    registry: Arc<Registry>,
    notifier: TerminalNotifier,
    installed: Option<RunNotify>,
    outcome: Arc<Outcome>,
    /// Durable delivery: the outbox's `--db` and the resolved argv.
    durable: Option<(PathBuf, Vec<String>)>,
    enqueued: Mutex<Vec<String>>,
    /// Durable delivery: the outcome to record on the run.
    durable_outcome: Mutex<Option<Value>>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field(
                "durable",
                &self.durable.as_ref().map(|(db, _)| crate::pg::shown(db)),
            )
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// Installs the run's notifier on a registry of its own, emitting on
    /// `handle`. Refusals are printed as warnings.
    pub(crate) fn install(self, handle: Handle) -> Wiring {
        let registry = Arc::new(Registry::new(DEFAULT_BUDGET));
        let notifier = TerminalNotifier::new(Arc::clone(&registry), handle);
        let outcome = Arc::new(Outcome {
            recorded: Mutex::new(None),
            stderr: stderr_file(self.outbox_db.as_deref(), &self.session),
        });
        let scope = RunScope::entity("session", self.session.clone());
        let mut durable = None;
        let mut installed = None;
        if self.durable {
            let resolution = resolve_on_terminal(
                self.per_run.as_ref(),
                self.project.as_ref(),
                self.global.as_ref(),
            );
            print_warnings(&resolution);
            match (&self.outbox_db, durable_argv(&resolution, &scope)) {
                (Some(db), Some(argv)) => durable = Some((db.clone(), argv)),
                (None, Some(_)) => warn("durable notify has no outbox to use; delivering directly"),
                _ => {}
            }
        }
        if durable.is_none() {
            let run = install_for_run(
                &registry,
                self.per_run.as_ref(),
                self.project.as_ref(),
                self.global.as_ref(),
                Arc::clone(&outcome) as Arc<dyn OutcomeSink>,
                &scope,
            );
            for warning in run.warnings() {
                warn(warning);
            }
            installed = Some(run);
        }
        Wiring {
            registry,
            notifier,
            installed,
            outcome,
            durable,
            enqueued: Mutex::new(Vec::new()),
            durable_outcome: Mutex::new(None),
        }
    }
}

fn print_warnings(resolution: &Resolution) {
    if let Some(warning) = &resolution.warning {
        warn(warning);
    }
}

/// The argv a durable dispatch runs, when a handler is configured and
/// accepts the run's session.
fn durable_argv(resolution: &Resolution, scope: &RunScope) -> Option<Vec<String>> {
    let handler = resolution.handler.as_ref()?;
    if !scope.entities.iter().any(|e| handler.filter.matches(e)) {
        return None;
    }
    let Adapter::Exec(argv) = &handler.adapter else {
        warn("this notify adapter cannot be delivered durably; not notifying");
        return None;
    };
    let mut argv = argv.as_slice().to_vec();
    if !argv.iter().any(|a| a == "{payload}") {
        argv.push("{payload}".to_owned());
    }
    Some(argv)
}

impl Wiring {
    /// Called once the run's terminal transition committed (the runner's
    /// `on_terminal` callback), with that history row.
    pub(crate) fn on_terminal(&self, transition: TransitionRecord) {
        let event = TerminalEvent { transition };
        match &self.durable {
            None => {
                if let Err(error) = self.notifier.on_terminal(&event) {
                    warn(&format!("terminal notify not started: {error}"));
                }
            }
            Some((db, argv)) => {
                let Some(envelope) = self.notifier.envelope_for(&event) else {
                    return;
                };
                match enqueue(db, argv, &envelope, &event.transition) {
                    Ok(id) => lock(&self.enqueued).push(id),
                    Err(error) => {
                        warn(&format!("terminal notify not enqueued: {error}"));
                        *lock(&self.durable_outcome) = Some(serde_json::json!({
                            "ok": false, "exit_code": null, "stderr_path": null,
                            "reason": ENQUEUE_FAILED,
                        }));
                    }
                }
            }
        }
    }

    /// Before exit: waits for direct handlers (bounded by the registry's
    /// budget) or makes one delivery scan for a durable dispatch; reports
    /// an unsuccessful outcome on stderr.
    pub(crate) async fn finish(&self) {
        for report in self.notifier.flush().await {
            if !report.failed.is_empty() || !report.timed_out.is_empty() {
                warn(&format!(
                    "terminal notify: {} handler(s) failed, {} timed out",
                    report.failed.len(),
                    report.timed_out.len()
                ));
            }
        }
        if let Some(installed) = &self.installed {
            installed.uninstall(&self.registry);
        }
        if let Some(outcome) = lock(&self.outcome.recorded).as_ref().filter(|o| !o.ok) {
            warn(&format!(
                "terminal notify unsuccessful: {}{}",
                outcome.reason.as_deref().unwrap_or("unknown"),
                outcome
                    .stderr_path
                    .as_ref()
                    .map(|p| format!(" (adapter stderr in {})", p.display()))
                    .unwrap_or_default()
            ));
        }
        let ids = lock(&self.enqueued).clone();
        if let Some((db, _)) = &self.durable
            && !ids.is_empty()
        {
            let db = db.clone();
            let scanned = tokio::task::spawn_blocking(move || scan(&db, &ids)).await;
            let outcome = match scanned {
                Ok(Ok(outcome)) => Some(outcome),
                Ok(Err(error)) => {
                    warn(&format!(
                        "outbox scan failed ({error}); `lionrt outbox deliver` retries"
                    ));
                    None
                }
                Err(error) => {
                    warn(&format!("outbox scan did not complete: {error}"));
                    None
                }
            };
            *lock(&self.durable_outcome) = outcome;
        }
    }

    /// The run's notify outcome as it is recorded on the session, or `None`
    /// when there is nothing to record (nothing configured, the session
    /// filtered out, or a durable scan that could not read its row back).
    fn outcome(&self) -> Option<Value> {
        if self.durable.is_some() {
            return lock(&self.durable_outcome).clone();
        }
        let outcome = lock(&self.outcome.recorded).clone()?;
        serde_json::to_value(outcome).ok()
    }

    /// After the run: records its notify outcome on session `session` of
    /// `store` (see the module documentation). Never fails the run: a
    /// failed write is a warning. Call it outside any async runtime (a
    /// PostgreSQL store blocks on its own).
    pub(crate) fn record_on<R: SessionRecorder>(&self, store: &R, session: &str) {
        let Some(outcome) = self.outcome() else {
            return;
        };
        if let Err(error) = record_outcome(store, session, outcome) {
            warn(&format!(
                "notify outcome not recorded on the session: {error}"
            ));
        }
    }
}

/// Writes `outcome` under [`OUTCOME_KEY`] of the session's `node_metadata`,
/// keeping its other keys, in one atomic update (a concurrent writer's
/// keys are never lost). A recorded outcome of the same dispatch with a
/// later `updated_at` is kept (see [`supersedes`]). A `node_metadata` that
/// is not a JSON object is not overwritten (an error).
fn record_outcome<R: SessionRecorder>(
    store: &R,
    session: &str,
    outcome: Value,
) -> anyhow::Result<()> {
    let written = store.update_session_metadata(session, OUTCOME_KEY, &mut |current| {
        supersedes(&outcome, current).then(|| outcome.clone())
    })?;
    match written {
        MetadataUpdate::Written | MetadataUpdate::Unchanged => Ok(()),
        MetadataUpdate::NotFound => anyhow::bail!("session {session:?} not found"),
        MetadataUpdate::NotAnObject => {
            anyhow::bail!("the session's node_metadata is not a JSON object; left as is")
        }
        other => anyhow::bail!("node_metadata not updated ({other:?})"),
    }
}

/// Whether `new` should replace the recorded outcome `current`: always,
/// unless both describe the same dispatch and `current` was read from a
/// later (or the same) write of that row, so an older state read by a
/// slower process never replaces a newer one.
fn supersedes(new: &Value, current: Option<&Value>) -> bool {
    let Some(current) = current else {
        return true;
    };
    let dispatch = |v: &Value| {
        let d = v.get("dispatch")?;
        Some((
            d.get("id")?.as_str()?.to_owned(),
            d.get("updated_at")?.as_i64()?,
        ))
    };
    match (dispatch(new), dispatch(current)) {
        (Some((new_id, new_at)), Some((id, at))) if new_id == id => new_at > at,
        _ => true,
    }
}

/// The outcome recorded for a durable dispatch in the state `row` is in:
/// `ok` once it was delivered (or acknowledged), otherwise a reason; the
/// dispatch's id, status, attempt and `updated_at`. No payload, argument
/// or error text.
fn durable_outcome(row: &DispatchRow) -> Value {
    let reason = match row.status {
        DispatchStatus::Delivered | DispatchStatus::Acked => None,
        DispatchStatus::DeadLetter => Some(DEAD_LETTERED),
        DispatchStatus::Expired => Some(EXPIRED),
        _ => Some(NOT_DELIVERED),
    };
    serde_json::json!({
        "ok": reason.is_none(),
        "exit_code": null,
        "stderr_path": null,
        "reason": reason,
        "dispatch": {
            "id": row.id,
            "status": row.status,
            "attempt": row.attempt,
            "updated_at": row.updated_at,
        },
    })
}

/// The session a durable notification's dedup key names, if the row is
/// one (`notify.on_terminal:session:<id>:<transition id>`).
fn notified_session(dedup_key: Option<&str>) -> Option<&str> {
    let rest = dedup_key?.strip_prefix(DEDUP_PREFIX)?;
    let (kind, rest) = rest.split_once(':')?;
    let (id, transition) = rest.rsplit_once(':')?;
    let numeric = !transition.is_empty() && transition.bytes().all(|b| b.is_ascii_digit());
    (kind == "session" && numeric && !id.is_empty()).then_some(id)
}

/// The sessions of an outbox's database, where a refreshed outcome goes.
pub(crate) trait SessionsOf {
    /// The database's session recorder.
    type Recorder: SessionRecorder;
    /// It.
    fn sessions(&self) -> &Self::Recorder;
}

impl SessionsOf for SqliteOutbox {
    type Recorder = Store;
    fn sessions(&self) -> &Store {
        self.store()
    }
}

impl<T: SessionsOf + ?Sized> SessionsOf for &T {
    type Recorder = T::Recorder;
    fn sessions(&self) -> &T::Recorder {
        (**self).sessions()
    }
}

impl SessionsOf for PgOutbox {
    type Recorder = PgStore;
    fn sessions(&self) -> &PgStore {
        self.store()
    }
}

/// An outbox whose moves refresh the notify outcome recorded on a run:
/// after a move that settles or reschedules a run's durable notification
/// (any applied move except a claim), the row is read back and its state
/// written on the session the row's dedup key names. The move is already
/// committed; a refresh that fails is a warning and never fails the move.
#[derive(Debug, Clone)]
pub(crate) struct RefreshOutcomes<S>(pub(crate) S);

impl<S: OutboxStore + SessionsOf> RefreshOutcomes<S> {
    fn refresh(&self, id: &str) {
        let row = match self.0.get(id) {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, id, "dispatch not read back; notify outcome not refreshed");
                return;
            }
        };
        let Some(session) = notified_session(row.dedup_key.as_deref()) else {
            return;
        };
        if let Err(error) = record_outcome(self.0.sessions(), session, durable_outcome(&row)) {
            tracing::warn!(%error, id, session, "notify outcome not refreshed on the session");
        }
    }
}

impl<S: OutboxStore + SessionsOf> OutboxStore for RefreshOutcomes<S> {
    type Error = S::Error;

    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, S::Error> {
        self.0.enqueue(id, new, actor, now)
    }
    fn get(&self, id: &str) -> Result<Option<DispatchRow>, S::Error> {
        self.0.get(id)
    }
    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, S::Error> {
        self.0.list(query)
    }
    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, S::Error> {
        self.0.due(now, limit)
    }
    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, S::Error> {
        let out = self.0.apply(mv)?;
        if matches!(out, MoveOutcome::Applied { .. }) && mv.to != DispatchStatus::Delivering {
            self.refresh(&mv.id);
        }
        Ok(out)
    }
    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, S::Error> {
        self.0.purge(id, actor)
    }
    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, S::Error> {
        self.0.purge_many(selection, dry_run, actor)
    }
    fn sweep_terminal(&self, before: i64) -> Result<u64, S::Error> {
        self.0.sweep_terminal(before)
    }
    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, S::Error> {
        self.0.history(id)
    }
    fn audit(&self) -> Result<Vec<AuditRecord>, S::Error> {
        self.0.audit()
    }
}

/// The notify outcome recorded in a session's `node_metadata` text, if any.
pub(crate) fn outcome_in_metadata(node_metadata: Option<&str>) -> Option<Value> {
    let meta: Value = serde_json::from_str(node_metadata?).ok()?;
    meta.get(OUTCOME_KEY).filter(|v| !v.is_null()).cloned()
}

/// One line for `sessions show`: `ok (exit 0)`, `failed: REASON`, with the
/// dispatch of a durable outcome.
pub(crate) fn describe_outcome(outcome: &Value) -> String {
    let mut text = if outcome["ok"] == Value::Bool(true) {
        "ok".to_owned()
    } else {
        format!(
            "failed: {}",
            outcome["reason"].as_str().unwrap_or("unknown")
        )
    };
    if let Some(code) = outcome["exit_code"].as_i64() {
        text.push_str(&format!(" (exit {code})"));
    }
    if let Some(id) = outcome["dispatch"]["id"].as_str() {
        text.push_str(&format!(
            ", dispatch {id} {}",
            outcome["dispatch"]["status"].as_str().unwrap_or("?")
        ));
    }
    text
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn actor() -> Actor {
    Actor::new(
        ActorType::System,
        format!("lionrt-notify-{}", std::process::id()),
    )
}

fn open(db: &Path) -> anyhow::Result<SqliteOutbox> {
    Ok(SqliteOutbox::new(Store::new(Engine::open(
        db,
        EngineConfig::default(),
    )?)))
}

/// The outbox of `--db`: the SQLite file's, or the PostgreSQL schema's.
fn with_outbox<T>(
    db: &Path,
    sqlite: impl FnOnce(&SqliteOutbox) -> anyhow::Result<T>,
    postgres: impl FnOnce(&PgOutbox) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    match crate::pg::url(db) {
        Some(url) => postgres(&PgOutbox::new(crate::pg::open(&url)?)),
        None => sqlite(&open(db)?),
    }
}

fn enqueue(
    db: &Path,
    argv: &[String],
    envelope: &notify::RunTerminalEnvelope,
    transition: &TransitionRecord,
) -> anyhow::Result<String> {
    with_outbox(
        db,
        |s| enqueue_on(s, argv, envelope, transition),
        |s| enqueue_on(s, argv, envelope, transition),
    )
}

fn enqueue_on<S: OutboxStore>(
    store: &S,
    argv: &[String],
    envelope: &notify::RunTerminalEnvelope,
    transition: &TransitionRecord,
) -> anyhow::Result<String> {
    let json = envelope.to_json()?;
    // li's placeholders ({status}, {session_id}, ...) are filled now, from
    // the envelope; the outbox's own ({payload}, {id}, {attempt},
    // {deliver_to}) stay for each attempt to fill.
    let filled: Vec<String> = argv
        .iter()
        .zip(notify::fill_placeholders(argv, envelope, &json))
        .map(|(given, filled)| {
            if outbox::PLACEHOLDERS.contains(&given.as_str()) {
                given.clone()
            } else {
                filled
            }
        })
        .collect();
    let mut new = NewDispatch::new(json);
    new.template = Some(Template::new(filled)?);
    new.dedup_key = Some(format!(
        "{DEDUP_PREFIX}{}:{}:{}",
        transition.entity_type, transition.entity_id, transition.id
    ));
    let out = enqueue_dispatch(store, &SystemClock, &new, &actor())?;
    tracing::info!(id = %out.id, created = out.created, "terminal notify enqueued");
    Ok(out.id)
}

/// Delivers the rows `ids` (this run's) and returns the outcome to record:
/// the first row's delivery state.
fn scan(db: &Path, ids: &[String]) -> anyhow::Result<Value> {
    with_outbox(db, |s| scan_on(s, ids), |s| scan_on(s, ids))
}

fn scan_on<S: OutboxStore + SessionsOf>(store: &S, ids: &[String]) -> anyhow::Result<Value> {
    let store = &RefreshOutcomes(store);
    let transport = ExecTransport {
        default_template: None,
        timeout: Some(SEND_TIMEOUT),
        live: None,
    };
    let config = ScanConfig {
        actor: Some(actor()),
        ..ScanConfig::default()
    };
    let report = deliver_ids(store, &transport, &SystemClock, &config, ids)?;
    tracing::info!(?report, "end-of-run outbox scan");
    let id = ids.first().map_or("", String::as_str);
    let row = store
        .get(id)?
        .ok_or_else(|| anyhow::anyhow!("dispatch {id} vanished after the scan"))?;
    Ok(durable_outcome(&row))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{notified_session, supersedes};

    #[test]
    fn only_a_session_notification_key_names_a_session() {
        fn key(k: &str) -> Option<&str> {
            notified_session(Some(k))
        }
        assert_eq!(key("notify.on_terminal:session:r1:42"), Some("r1"));
        assert_eq!(key("notify.on_terminal:session:a:b:7"), Some("a:b"));
        assert_eq!(key("notify.on_terminal:play:r1:42"), None);
        assert_eq!(key("notify.on_terminal:session:r1:x"), None);
        assert_eq!(key("notify.on_terminal:session::42"), None);
        assert_eq!(key("notify.on_terminal:session:r1"), None);
        assert_eq!(key("other:session:r1:42"), None);
        assert_eq!(notified_session(None), None);
    }

    #[test]
    fn an_older_state_of_the_same_dispatch_never_replaces_a_newer_one() {
        let at = |id: &str, t: i64| json!({"ok": false, "dispatch": {"id": id, "updated_at": t}});
        assert!(supersedes(&at("d1", 5), None));
        assert!(supersedes(&at("d1", 6), Some(&at("d1", 5))));
        assert!(!supersedes(&at("d1", 5), Some(&at("d1", 6))));
        assert!(!supersedes(&at("d1", 5), Some(&at("d1", 5))));
        // Another dispatch, or an outcome without one, is replaced.
        assert!(supersedes(&at("d2", 1), Some(&at("d1", 6))));
        assert!(supersedes(&at("d1", 1), Some(&json!({"ok": true}))));
        assert!(supersedes(&json!({"ok": false}), Some(&at("d1", 6))));
    }
}
