//! The job verbs of `lionrt mcp serve`: a submission starts a detached
//! `lionrt run` (this binary, its own process group, the same `--db`,
//! stdout and stderr to a log in the job's directory), so the run goes
//! through the same run builder as the command line (admission, the gate,
//! secrets and notify rules hold) and outlives the server; every other job
//! verb reads the store, which is the only state a restarted server needs.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use lifecycle_core::{Actor, ActorType, SessionFilter, StateReader};
use serde_json::{Map, Value, json};

use super::verbs::{MAX_PROMPT_BYTES, MAX_SCRIPT_BYTES, MAX_WAIT_SECS};
use crate::backend::Backend;

/// Where the server works: the store and the jobs' directory.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// The `--db` store (a SQLite file or a PostgreSQL URL).
    pub(crate) db: PathBuf,
    /// One directory per job: its prompt file and its log.
    pub(crate) jobs_dir: PathBuf,
    /// This binary, which every job runs as `lionrt run`.
    pub(crate) exe: PathBuf,
}

/// How long a submission waits for its session row before it reports the
/// run's own error (from its log).
const START_DEADLINE: Duration = Duration::from_secs(60);

fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn uint(args: &Map<String, Value>, key: &str, default: u64) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or(default)
}

/// A path from a caller: relative ones are taken from `base`.
fn resolve(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_owned()
    } else {
        base.join(p)
    }
}

/// Reads a file of at most `cap` bytes, or says why not (never reads more
/// than `cap + 1` bytes).
fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    // A regular file only: a FIFO or a device could block the server.
    let meta =
        std::fs::metadata(path).with_context(|| format!("reading {what} {}", path.display()))?;
    if !meta.is_file() {
        bail!("{what} {} is not a regular file", path.display());
    }
    let file =
        std::fs::File::open(path).with_context(|| format!("reading {what} {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > cap {
        bail!(
            "{what} {} is over the {cap}-byte cap of a submission",
            path.display()
        );
    }
    Ok(bytes)
}

/// What a submission starts. Only `lionrt run` today; `lionrt flow`,
/// `fanout` and `play` join here as variants (their subcommand and their
/// own flags from the verb's args), detached, logged and awaited the same
/// way, with their `*.submit` verbs in the catalogue.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Launch {
    /// `lionrt run`: one agent leg.
    Run,
}

impl Launch {
    fn subcommand(self) -> &'static str {
        match self {
            Launch::Run => "run",
        }
    }
}

/// A `*.submit` verb: starts the detached job and returns once its
/// session is recorded (or with the job's own error when it refused to
/// start).
pub(crate) async fn submit(
    place: &Place,
    launch: Launch,
    submitter: &str,
    args: &Map<String, Value>,
) -> Result<Value> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let workspace = text(args, "workspace").map(|w| resolve(&cwd, w));
    let base = workspace.clone().unwrap_or_else(|| cwd.clone());
    let prompt = match (text(args, "prompt"), text(args, "prompt_file")) {
        (Some(_), Some(_)) => bail!("give prompt or prompt_file, not both"),
        (Some(p), None) => Some(p.to_owned()),
        (None, Some(file)) => {
            let bytes = read_capped(
                &resolve(&base, file),
                MAX_PROMPT_BYTES as u64,
                "prompt_file",
            )?;
            Some(String::from_utf8(bytes).map_err(|_| anyhow!("prompt_file is not UTF-8"))?)
        }
        (None, None) => None,
    };
    if let Some(p) = &prompt
        && p.len() > MAX_PROMPT_BYTES
    {
        bail!(
            "the prompt is {} bytes, over the {MAX_PROMPT_BYTES}-byte cap of a submission",
            p.len()
        );
    }
    let script = match text(args, "script_path") {
        Some(path) => {
            let path = resolve(&base, path);
            read_capped(&path, MAX_SCRIPT_BYTES, "script_path")?;
            Some(path)
        }
        None => None,
    };
    let session = match text(args, "session") {
        Some(s) => s.to_owned(),
        None => format!("mcp-{}", state_sqlite::now_micros()),
    };
    let dir = place.jobs_dir.join(&session);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&place.jobs_dir)
        .with_context(|| format!("creating {}", place.jobs_dir.display()))?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                anyhow!("session {session} was already submitted here; give another session id")
            }
            _ => anyhow!("creating {}: {e}", dir.display()),
        })?;
    let mut command = Command::new(&place.exe);
    command
        .arg("--db")
        .arg(&place.db)
        .args(["--json", launch.subcommand(), "--session", &session])
        .arg(format!("--submitted-by={submitter}"));
    if let Some(prompt) = &prompt {
        let file = dir.join("prompt.txt");
        write_private(&file, prompt.as_bytes())?;
        command.arg("--prompt-file").arg(file);
    }
    for (key, flag) in [
        ("provider", "--provider"),
        ("model", "--model"),
        ("effort", "--effort"),
        ("label", "--label"),
    ] {
        // `--flag=value`: a value that looks like a flag stays a value.
        if let Some(v) = text(args, key) {
            command.arg(format!("{flag}={v}"));
        }
    }
    if let Some(w) = &workspace {
        command.arg("--workspace").arg(w);
    }
    if let Some(s) = &script {
        command.arg("--script").arg(s);
    }
    let log_path = dir.join("run.log");
    let log = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let err_log = log.try_clone().context("duplicating the log")?;
    command
        .current_dir(&base)
        .env_remove("LIONRT_DB")
        // The server's bearer token is never handed to a job or its agent.
        .env_remove(super::TOKEN_VAR)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        // Its own group: the server's signals (a Ctrl-C, a SIGKILL of the
        // server's group) do not reach the run, which outlives the server.
        .process_group(0);
    let submitted = Instant::now();
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", place.exe.display()))?;
    let pid = child.id();
    // Reaped here while the server lives; a server that dies leaves it to
    // init, which reaps it.
    let (exited_tx, exited_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = exited_tx.send(child.wait().ok().and_then(|s| s.code()));
    });
    let deadline = submitted + START_DEADLINE;
    loop {
        if let Ok(Some(row)) = read_session(&place.db, &session) {
            let recorded_ms = submitted.elapsed().as_secs_f64() * 1000.0;
            return Ok(json!({
                "session": session,
                "pid": pid,
                "pgid": pid,
                "log": log_path,
                "submitted_by": submitter,
                "submit_to_record_ms": (recorded_ms * 10.0).round() / 10.0,
                "status": row["status"],
            }));
        }
        if let Ok(code) = exited_rx.try_recv() {
            // It may have recorded the session just before exiting.
            if let Ok(Some(row)) = read_session(&place.db, &session) {
                return Ok(json!({"session": session, "pid": pid, "log": log_path,
                                 "submitted_by": submitter, "status": row["status"]}));
            }
            let tail = log_tail(&log_path, 2048).unwrap_or_default();
            let _ = std::fs::remove_dir_all(&dir);
            bail!(
                "the run did not start (exit {}): {}",
                code.map_or("by signal".to_owned(), |c| c.to_string()),
                last_error(&tail)
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "session {session} was not recorded within {}s; its log is {}",
                START_DEADLINE.as_secs(),
                log_path.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The error lines of a run that refused to start (its stderr), else the
/// whole tail.
fn last_error(tail: &str) -> String {
    let lines: Vec<&str> = tail
        .lines()
        .filter(|l| l.starts_with("error") || l.contains("Error") || l.contains("error:"))
        .collect();
    if lines.is_empty() {
        tail.trim().to_owned()
    } else {
        lines.join("\n")
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// The last `bytes` of a log (cut at a line start), or `None` without one.
fn log_tail(path: &Path, bytes: u64) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(bytes);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    Some(match (from > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_owned(),
        _ => text,
    })
}

/// [`session_json`] on the store `db` names.
fn read_session(db: &Path, id: &str) -> Result<Option<Value>> {
    crate::backend::with_backend!(db, |b| session_json(b.reader(), id))
}

/// A session's row as JSON, `None` when there is none.
fn session_json<R: StateReader>(reader: &R, id: &str) -> Result<Option<Value>> {
    Ok(reader
        .session_row(id)?
        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null)))
}

fn resolve_session<R: StateReader>(reader: &R, prefix: &str) -> Result<String> {
    crate::view::resolve_one(reader, "session", prefix)
}

fn is_terminal(status: &str) -> bool {
    lifecycle_core::default_registry()
        .get("session")
        .is_ok_and(|p| p.is_terminal(status))
}

/// `job.status`.
pub(crate) fn status(place: &Place, args: &Map<String, Value>) -> Result<Value> {
    let prefix = text(args, "session").unwrap_or_default();
    crate::backend::with_backend!(&place.db, |b| {
        let id = resolve_session(b.reader(), prefix)?;
        let row = session_json(b.reader(), &id)?
            .ok_or_else(|| anyhow!("session {id:?} vanished while reading"))?;
        let ended = row["status"].as_str().is_some_and(is_terminal);
        Ok(json!({"session": row, "ended": ended}))
    })
}

/// `job.list`.
pub(crate) fn list(place: &Place, args: &Map<String, Value>) -> Result<Value> {
    let mut filter = SessionFilter::all();
    filter.status = text(args, "status").map(str::to_owned);
    filter.open_only = args.get("open").and_then(Value::as_bool).unwrap_or(false);
    filter.limit = Some(u32::try_from(uint(args, "limit", 20)).unwrap_or(200));
    crate::backend::with_backend!(&place.db, |b| {
        let rows = b.reader().sessions(&filter)?;
        Ok(json!({"sessions": rows}))
    })
}

/// `job.output`: the last `tail` recorded messages, the log's tail and,
/// once the run ended, its report (the log's last line).
pub(crate) fn output(place: &Place, args: &Map<String, Value>) -> Result<Value> {
    let prefix = text(args, "session").unwrap_or_default();
    let tail = usize::try_from(uint(args, "tail", 20)).unwrap_or(200);
    let log_bytes = uint(args, "log_bytes", 4096);
    let (id, status, messages) = crate::backend::with_backend!(&place.db, |b| {
        let reader = b.reader();
        let id = resolve_session(reader, prefix)?;
        let status = reader
            .session_row(&id)?
            .map(|r| r.status)
            .unwrap_or_default();
        let mut last: VecDeque<Value> = VecDeque::new();
        let mut after = 0;
        loop {
            let batch = reader.messages(&id, after, 1000)?;
            let Some(end) = batch.last() else { break };
            after = end.seq;
            for m in batch {
                let content: Value = serde_json::from_str(&m.content)
                    .unwrap_or_else(|_| Value::String(m.content.clone()));
                last.push_back(
                    json!({"seq": m.seq, "role": m.role, "created_at": m.created_at,
                                      "content": content}),
                );
                if last.len() > tail {
                    last.pop_front();
                }
            }
        }
        anyhow::Ok((id, status, last))
    })?;
    let log_path = place.jobs_dir.join(&id).join("run.log");
    let log = log_tail(&log_path, log_bytes.max(1));
    let report = log
        .as_deref()
        .and_then(|l| l.lines().last())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("history").is_some());
    let log = log.map(|l| if log_bytes == 0 { String::new() } else { l });
    Ok(json!({
        "session": id,
        "status": status,
        "ended": is_terminal(&status),
        "messages": messages,
        "log": log,
        "report": report.map(|mut r| {
            // The report's history is `job.timeline`'s.
            if let Some(o) = r.as_object_mut() {
                o.remove("history");
            }
            r
        }),
    }))
}

/// `job.wait`: polls the store until the session is terminal, the timeout
/// passes or the caller cancels.
pub(crate) async fn wait(
    place: &Place,
    args: &Map<String, Value>,
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<Value> {
    let prefix = text(args, "session").unwrap_or_default().to_owned();
    let timeout = Duration::from_secs(uint(args, "timeout_s", 60).min(MAX_WAIT_SECS));
    let id = crate::backend::with_backend!(&place.db, |b| resolve_session(b.reader(), &prefix))?;
    let started = Instant::now();
    let mut cancelled = std::pin::pin!(cancelled);
    loop {
        let row = read_session(&place.db, &id)?
            .ok_or_else(|| anyhow!("session {id:?} vanished while waiting"))?;
        let ended = row["status"].as_str().is_some_and(is_terminal);
        let waited = started.elapsed();
        if ended || waited >= timeout {
            return Ok(json!({"session": row, "ended": ended,
                             "waited_ms": u64::try_from(waited.as_millis()).unwrap_or(u64::MAX)}));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100).min(timeout - waited)) => {}
            () = &mut cancelled => bail!("the wait was cancelled"),
        }
    }
}

/// `job.kill`: `lionrt kill`'s guarded path, as the caller.
pub(crate) async fn kill(
    place: &Place,
    submitter: &str,
    args: &Map<String, Value>,
) -> Result<Value> {
    let prefix = text(args, "session").unwrap_or_default().to_owned();
    let grace = args.get("grace_s").and_then(Value::as_f64).unwrap_or(5.0);
    let grace = Duration::try_from_secs_f64(grace).context("grace_s")?;
    let actor = Actor::new(ActorType::Agent, submitter);
    let db = place.db.clone();
    let report =
        tokio::task::spawn_blocking(move || crate::kill::kill_one(&db, &prefix, grace, &actor))
            .await
            .context("the kill task")??;
    Ok(serde_json::to_value(report)?)
}

/// `job.timeline`: every status change of what an id names, with actors.
pub(crate) fn timeline(place: &Place, args: &Map<String, Value>) -> Result<Value> {
    let prefix = text(args, "id").unwrap_or_default();
    crate::backend::with_backend!(&place.db, |b| {
        let reader = b.reader();
        let mut entities = Vec::new();
        for policy in lifecycle_core::default_registry().iter() {
            if let Some(id) = crate::view::resolve(reader, policy.entity_type(), prefix)? {
                entities.push((policy.entity_type().to_owned(), id));
            }
        }
        if entities.is_empty() {
            bail!("nothing in the store has an id starting with {prefix:?}");
        }
        let mut transitions = Vec::new();
        for (kind, id) in &entities {
            transitions.extend(reader.transitions(kind, id)?);
        }
        transitions.sort_by_key(|t| (t.created_at, t.id));
        let list: Vec<Value> = entities
            .iter()
            .map(|(k, i)| json!({"entity_type": k, "id": i}))
            .collect();
        Ok(json!({"entities": list, "transitions": transitions}))
    })
}

/// The command-line read verbs, run as `lionrt --db DB --json ...` in a
/// child: the same code and output as the commands, and nothing they print
/// can reach the server's own stdout (the stdio transport).
pub(crate) async fn cli_read(
    place: &Place,
    verb: &str,
    args: &Map<String, Value>,
) -> Result<Value> {
    let mut argv: Vec<String> = match verb {
        "state.health" => {
            let mut a = vec!["state".into(), "health".into()];
            if args.get("all").and_then(Value::as_bool) == Some(true) {
                a.push("--all".into());
            }
            a
        }
        "state.stats" => vec!["state".into(), "stats".into()],
        "monitor" => vec!["monitor".into()],
        "schedule.ls" => vec!["schedule".into(), "ls".into()],
        "schedule.show" => vec!["schedule".into(), "show".into()],
        "schedule.runs" => vec![
            "schedule".into(),
            "runs".into(),
            format!("--limit={}", uint(args, "limit", 50)),
        ],
        "outbox.ls" => {
            let mut a = vec![
                "outbox".into(),
                "ls".into(),
                format!("--limit={}", uint(args, "limit", 50)),
            ];
            if let Some(s) = text(args, "status") {
                a.push(format!("--status={s}"));
            }
            a
        }
        "outbox.show" => vec!["outbox".into(), "show".into()],
        other => bail!("{other} is not a read verb"),
    };
    // Positionals after `--`: a name that looks like a flag stays a name.
    let positional = match verb {
        "schedule.show" | "schedule.runs" => text(args, "name"),
        "outbox.show" => text(args, "id"),
        _ => None,
    };
    if let Some(p) = positional {
        argv.push("--".into());
        argv.push(p.to_owned());
    }
    let (exe, db) = (place.exe.clone(), place.db.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(exe)
            .arg("--db")
            .arg(db)
            .arg("--json")
            .args(argv)
            .env_remove("LIONRT_DB")
            // The server's bearer token is never handed to a job or its agent.
            .env_remove(super::TOKEN_VAR)
            .stdin(Stdio::null())
            .output()
    })
    .await
    .context("the read task")?
    .context("starting the read command")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() && stdout.trim().is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("{}", stderr.trim().trim_start_matches("error: "));
    }
    let value: Value = serde_json::from_str(stdout.trim())
        .with_context(|| format!("reading the output of {verb}"))?;
    Ok(value)
}

/// Ends the sessions whose `lionrt run` is provably gone (the sweep every
/// run starts with), so a server started after a crash reports them ended.
pub(crate) fn sweep(place: &Place) {
    let db = &place.db;
    if crate::pg::url(db).is_none()
        && !matches!(
            state_sqlite::recognise(db),
            Ok(state_sqlite::StoreKind::Lionrt { .. })
        )
    {
        return;
    }
    let procs = runner::Processes {
        table: &cli_supervisor::ProcTable,
        signaller: &cli_supervisor::OsSignaller,
    };
    let actor = crate::run::sweep_actor();
    let swept = match crate::pg::url(db) {
        Some(url) => crate::pg::open(&url)
            .and_then(|s| Ok(runner::sweep_orphans(&s, &procs, &actor, false)?)),
        None => crate::state::open_store(db)
            .and_then(|s| Ok(runner::sweep_orphans(&s, &procs, &actor, false)?)),
    };
    match swept {
        Ok(report) => {
            for s in &report.orphans {
                tracing::info!(session = %s.id, ended = s.ended, "orphaned session swept");
            }
        }
        Err(error) => tracing::warn!(%error, "orphan sweep failed"),
    }
}
