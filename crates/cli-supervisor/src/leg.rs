//! A running leg: spawn, stream, end, and the Drop backstop.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cgroup::{CgroupMove, Containment, LegCgroup};
use crate::env::EnvPolicy;
use crate::error::{Error, Result};
use crate::guard::{ChildState, GroupSignal, OsSignaller, SignalOutcome, signal_group_on_evidence};
use crate::ndjson::{Event, LineDecoder};
use crate::pidfd::PidFd;
use crate::proc::{ProcTable, ProcessTable, SpawnedProcess, observe_spawned};
use crate::redact::{Redactor, looks_secret_name};
use crate::secrets::{SecretResolution, fill_declared_secrets};
use crate::sentinel::Sentinel;
use crate::spawner::spawn_with_death_signal;
use crate::spec::{LegSpec, StdinPolicy, Watchdogs};

/// How long teardown waits for the group to empty after SIGKILL.
const KILL_SETTLE: Duration = Duration::from_secs(5);
/// How long a finished leg waits for the stderr reader to reach end of file.
const STDERR_SETTLE: Duration = Duration::from_secs(1);
/// The stdout read buffer size.
const READ_CHUNK: usize = 256 * 1024;

/// The stdout pipe capacity asked for (the kernel default is 64 KiB). Each
/// leg spends 256 pages of the user's pipe budget (`pipe-user-pages-soft`,
/// 16384 by default): past it the kernel refuses the widening (the leg
/// keeps 64 KiB) and gives the user's new pipes a minimal buffer, so an
/// unprivileged user running ~60 legs at once reaches it. 256 KiB won a
/// standalone A/B runner but lost in the criterion bench; revisit on a
/// quieter machine.
const PIPE_CAPACITY: usize = 1024 * 1024;

/// Asks the kernel for a larger stdout pipe, so a fast writer fills it in
/// fewer, larger steps and blocks less often. Best effort: the limit is
/// `/proc/sys/fs/pipe-max-size` and a per-user budget, and a refusal only
/// leaves the default capacity.
fn widen_pipe(stdout: &ChildStdout) {
    if let Err(error) = rustix::pipe::fcntl_setpipe_size(stdout, PIPE_CAPACITY) {
        tracing::debug!(%error, "stdout pipe keeps its default capacity");
    }
}

/// A spawned leg: its own process group, its stdout as [`Event`]s, and a
/// teardown that leaves nothing of the group running.
///
/// Dropping a `Leg` whose teardown did not complete (including dropping a
/// future that owns it at any await point) runs a synchronous SIGKILL
/// backstop under the same evidence rule as [`Leg::end`].
pub struct Leg {
    child: Child,
    record: SpawnedProcess,
    pidfd: Option<PidFd>,
    cgroup: Option<LegCgroup>,
    /// The move into `cgroup`, until it settles (always before `spawn`
    /// returns).
    cgroup_move: Option<CgroupMove>,
    sentinel: Option<Sentinel>,
    secret_reason: Option<&'static str>,
    secrets_resolved: Vec<String>,
    reaped: Option<ExitStatus>,
    ended: bool,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stderr_task: Option<JoinHandle<()>>,
    stderr_tail_len: usize,
    redactor: Redactor,
    decoder: LineDecoder,
    watchdogs: Watchdogs,
    spawned_at: Instant,
    last_output: Option<Instant>,
    grace: Duration,
    teardown: Option<Teardown>,
}

/// What teardown did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Teardown {
    /// The SIGTERM pass, if one was needed.
    pub term: Option<SignalOutcome>,
    /// The SIGKILL pass, if one was needed.
    pub kill: Option<SignalOutcome>,
    /// Live group members still seen after teardown gave up waiting.
    pub survivors: Vec<i32>,
}

/// How a leg ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct LegExit {
    /// The direct child's exit status.
    pub status: ExitStatus,
    /// The last bytes the leg wrote to stderr (bounded).
    pub stderr_tail: Vec<u8>,
    /// The spawn record.
    pub record: SpawnedProcess,
    /// What ending the group took.
    pub teardown: Teardown,
}

impl Leg {
    /// Spawns a leg in its own process group and, if the spec has one,
    /// drives `on_spawn` to completion before returning (and so before any
    /// output is read).
    ///
    /// Creating the child is synchronous, so there is no await point
    /// between the OS creating it and this function holding its handle; from
    /// then on the handle's Drop backstop covers every cancellation. If
    /// `on_spawn` fails the group is ended and the error returned; if it
    /// panics the group is ended and the panic resumed.
    pub async fn spawn(mut spec: LegSpec) -> Result<Self> {
        if spec.argv.is_empty() {
            return Err(Error::EmptyArgv);
        }
        // Secret filling happens once per spawn, here, before the child
        // exists: cancelling it leaves no leg behind.
        let mut secrets =
            fill_declared_secrets(&spec.secret_lookup, std::mem::take(&mut spec.env)).await;
        spec.env = std::mem::take(&mut secrets.env);
        let redactor = leg_redactor(&spec, &secrets);
        let Some(program) = spec.argv.first() else {
            return Err(Error::EmptyArgv);
        };
        let mut command = Command::new(program);
        command
            .args(&spec.argv[1..])
            .process_group(0)
            .stdin(match spec.stdin {
                StdinPolicy::Null => Stdio::null(),
                StdinPolicy::Inherit => Stdio::inherit(),
                StdinPolicy::Piped => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        if let EnvPolicy::Explicit(env) = &spec.env {
            command.env_clear();
            command.envs(env.iter());
        }
        let mut child = spawn_with_death_signal(command).map_err(|source| Error::Spawn {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
        let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else {
            // Tokio only forgets the id after reaping, which cannot have
            // happened yet; treat it as a spawn failure all the same.
            let _ = child.start_kill();
            return Err(Error::Spawn {
                program: program.to_string_lossy().into_owned(),
                source: std::io::Error::other("child id unavailable after spawn"),
            });
        };
        // The pidfd is opened while the child is unreaped, so it refers to
        // this child and can never reach a recycled pid.
        let pidfd = PidFd::open(pid);
        // Observed first: a quick leg may be gone by the time the cgroup is
        // made, and then nothing could be established about it.
        let record = observe_spawned(&ProcTable, pid);
        // The move into a cgroup runs while the spawn record is stored; it
        // settles before this function returns. It begins after the orphan
        // guard's fork, which it would hold back.
        let mut cgroup_move = LegCgroup::start(&spec.containment, pid);
        let sentinel = spec.orphan_guard.and_then(|grace| {
            Sentinel::start(pid, grace, cgroup_move.as_ref().map(CgroupMove::path))
        });
        if let Some(moving) = cgroup_move.as_mut() {
            if pidfd.as_ref().is_some_and(PidFd::exited) {
                moving.skip();
            } else {
                moving.begin();
            }
        }
        let watchdogs = spec.effective_watchdogs();
        if let Some(stdout) = &child.stdout {
            widen_pipe(stdout);
        }
        let mut leg = Self {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            record,
            pidfd,
            cgroup: None,
            cgroup_move,
            sentinel,
            secret_reason: secrets.reason,
            secrets_resolved: secrets.resolved,
            reaped: None,
            ended: false,
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
            stderr_task: None,
            stderr_tail_len: spec.stderr_tail_len,
            redactor,
            decoder: LineDecoder::new(spec.max_line_len, spec.line_format, READ_CHUNK),
            watchdogs,
            spawned_at: Instant::now(),
            last_output: None,
            grace: spec.grace,
            teardown: None,
        };
        tracing::info!(pid, create_time = ?record.create_time, "leg spawned");
        if let Some(on_spawn) = spec.on_spawn.take() {
            let mut recording = on_spawn.call(record);
            let outcome = poll_fn(|cx| {
                match std::panic::catch_unwind(AssertUnwindSafe(|| recording.as_mut().poll(cx))) {
                    Ok(Poll::Pending) => Poll::Pending,
                    Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
                    Err(panic) => Poll::Ready(Err(panic)),
                }
            })
            .await;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(source)) => {
                    tracing::warn!(pid, "on_spawn failed; ending the leg");
                    leg.end_child_group().await;
                    return Err(Error::OnSpawn { source });
                }
                Err(panic) => {
                    tracing::warn!(pid, "on_spawn panicked; ending the leg");
                    leg.end_child_group().await;
                    std::panic::resume_unwind(panic);
                }
            }
        }
        leg.settle_cgroup().await;
        leg.start_stderr_reader();
        Ok(leg)
    }

    /// Waits for the move into the leg's cgroup, if one is under way.
    /// Cancel-safe: the move stays with the leg until it has settled.
    async fn settle_cgroup(&mut self) {
        if let Some(moving) = self.cgroup_move.as_mut() {
            let moved = moving.wait().await;
            if let Some(moving) = self.cgroup_move.take() {
                self.cgroup = moving.conclude(moved);
            }
        }
    }

    /// The spawn record (the same value `on_spawn` received).
    pub fn record(&self) -> SpawnedProcess {
        self.record
    }

    /// Which containment the leg got (process group, or also a cgroup).
    pub fn containment(&self) -> Containment {
        match &self.cgroup {
            Some(cgroup) => Containment::Cgroup {
                path: cgroup.path().to_owned(),
            },
            None => Containment::ProcessGroup,
        }
    }

    /// The pid of the orphan guard's sentinel, while it stands guard.
    pub fn orphan_guard_pid(&self) -> Option<i32> {
        self.sentinel.as_ref().map(Sentinel::pid)
    }

    /// Why the configured secret lookup was refused, if it was.
    pub fn secret_lookup_reason(&self) -> Option<&'static str> {
        self.secret_reason
    }

    /// The names whose secrets were looked up into this leg's environment.
    pub fn resolved_secrets(&self) -> &[String] {
        &self.secrets_resolved
    }

    /// The values this leg's output is redacted against: the spec's
    /// [`LegSpec::redact`], every value `secrets.lookup` put into (or found
    /// already in) the child's environment, and every variable of that
    /// environment whose name looks secret ([`looks_secret_name`]). A
    /// caller applies it to anything it assembles from several events.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The watchdogs in force for this leg.
    pub fn watchdogs(&self) -> Watchdogs {
        self.watchdogs
    }

    /// The child's stdin, when the spec asked for [`StdinPolicy::Piped`].
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The last stderr bytes read so far (bounded by the spec's tail length).
    pub fn stderr_tail(&self) -> Vec<u8> {
        self.redactor
            .redact_tail(&snapshot(&self.stderr_tail), self.stderr_tail_len)
    }

    /// The next stdout event, or `None` at end of stdout.
    ///
    /// When a watchdog fires the leg's group is ended first and the
    /// timeout returned. Cancelling this future loses no bytes.
    pub async fn next_event(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Ok(Some(self.clean(event)));
            }
            let Some(stdout) = self.stdout.as_mut() else {
                return Ok(None);
            };
            let liveness = match self.last_output {
                None => self
                    .watchdogs
                    .first_output
                    .map(|after| (self.spawned_at + after, WatchdogKind::FirstOutput(after))),
                Some(last) => self
                    .watchdogs
                    .idle
                    .map(|after| (last + after, WatchdogKind::Idle(after))),
            };
            let total = self
                .watchdogs
                .total
                .map(|after| (self.spawned_at + after, WatchdogKind::Total(after)));
            // The earlier of the two fires.
            let deadline = match (liveness, total) {
                (Some(l), Some(t)) => Some(if t.0 <= l.0 { t } else { l }),
                (l, t) => l.or(t),
            };
            let read = match deadline {
                None => stdout.read(self.decoder.read_buf()).await,
                Some((at, kind)) => {
                    match tokio::time::timeout_at(at, stdout.read(self.decoder.read_buf())).await {
                        Ok(read) => read,
                        Err(_) => {
                            tracing::warn!(
                                pid = self.record.pid,
                                ?kind,
                                "watchdog fired; ending the leg"
                            );
                            self.end_child_group().await;
                            return Err(kind.into_error());
                        }
                    }
                }
            };
            match read {
                Ok(0) => {
                    self.stdout = None;
                    return Ok(self.decoder.finish().map(|e| self.clean(e)));
                }
                Ok(n) => {
                    self.last_output = Some(Instant::now());
                    self.decoder.filled(n);
                }
                Err(source) => return Err(Error::Io { source }),
            }
        }
    }

    /// The next stdout event from what has already been read, without
    /// reading more (so without waiting); `None` when no complete line is
    /// buffered. A consumer can take every event one read delivered and
    /// handle them as a batch before awaiting [`Leg::next_event`] again.
    pub fn next_buffered_event(&mut self) -> Option<Event> {
        self.decoder.next_event().map(|e| self.clean(e))
    }

    /// `event` redacted against [`Leg::redactor`]: every string of a
    /// parsed value, and the text of a raw line (which is withheld, as an
    /// [`Event::InvalidJson`], if a value spanned its JSON structure).
    fn clean(&self, event: Event) -> Event {
        if self.redactor.is_empty() {
            return event;
        }
        match event {
            Event::Json { line, mut value } => {
                self.redactor.redact_value(&mut value);
                Event::Json { line, value }
            }
            Event::RawJson { line, json } => match self.redactor.redact_json_text(&json) {
                Some(std::borrow::Cow::Borrowed(_)) => Event::RawJson { line, json },
                Some(std::borrow::Cow::Owned(clean)) => Event::RawJson {
                    line,
                    json: clean.into(),
                },
                None => Event::InvalidJson {
                    line,
                    error: "a secret value spanned the line's JSON structure; the line is withheld"
                        .to_owned(),
                },
            },
            other => other,
        }
    }

    /// Waits for the leg to exit on its own, then ends anything still in its
    /// group (a descendant left behind by an exiting leader is ended too).
    ///
    /// Read events until `None` first: unread stdout is closed here, so a
    /// child still writing gets a broken pipe rather than blocking forever.
    pub async fn wait(mut self) -> Result<LegExit> {
        self.stdout = None;
        self.wait_leader_exit().await;
        self.finish().await
    }

    /// Ends the leg now: SIGTERM to the group, the grace period, then
    /// SIGKILL to anyone still in it; every signal under the evidence rule.
    ///
    /// This is the spec's `end_child_group()`; [`Leg::wait`], a firing
    /// watchdog and a failed `on_spawn` go through the same routine.
    #[doc(alias = "end_child_group")]
    pub async fn end(mut self) -> Result<LegExit> {
        self.finish().await
    }

    async fn finish(&mut self) -> Result<LegExit> {
        let teardown = self.end_child_group().await;
        let status = match self.reaped {
            Some(status) => status,
            None => {
                return Err(Error::Io {
                    source: std::io::Error::other("leg exit status unavailable"),
                });
            }
        };
        if let Some(task) = self.stderr_task.as_mut() {
            let _ = tokio::time::timeout(STDERR_SETTLE, task).await;
        }
        Ok(LegExit {
            status,
            stderr_tail: self
                .redactor
                .redact_tail(&snapshot(&self.stderr_tail), self.stderr_tail_len),
            record: self.record,
            teardown,
        })
    }

    /// The single teardown routine every path uses. Idempotent.
    async fn end_child_group(&mut self) -> Teardown {
        if let Some(done) = &self.teardown {
            return done.clone();
        }
        // Teardown reads and kills the cgroup: the leg must be in it first.
        self.settle_cgroup().await;
        // The sentinel stands down first: it is a live member of the group
        // and would otherwise count as one.
        if let Some(sentinel) = self.sentinel.take() {
            sentinel.dismiss().await;
        }
        let table = ProcTable;
        let signaller = OsSignaller;
        let pgid = self.record.pgid;
        let mut report = Teardown::default();
        if self.reaped.is_none() {
            // While the leader is unreaped (a zombie at worst) the group id
            // is pinned: every signal below rests on that evidence.
            let mut quiet = self.group_quiet();
            if !quiet {
                report.term = Some(signal_group_on_evidence(
                    &table,
                    &signaller,
                    pgid,
                    ChildState::Unreaped,
                    GroupSignal::Term,
                ));
                self.signal_leader(GroupSignal::Term);
                let deadline = Instant::now() + self.grace;
                quiet = self.wait_group_quiet(deadline).await;
                if !quiet {
                    report.kill = Some(signal_group_on_evidence(
                        &table,
                        &signaller,
                        pgid,
                        ChildState::Unreaped,
                        GroupSignal::Kill,
                    ));
                    self.signal_leader(GroupSignal::Kill);
                    if let Some(cgroup) = &self.cgroup {
                        // Also reaches descendants that left the group with setsid().
                        cgroup.kill();
                    }
                    quiet = self.wait_group_quiet(Instant::now() + KILL_SETTLE).await;
                }
            }
            if !quiet {
                // A group just proven empty has no survivors to look for.
                report.survivors = table.scan_group(pgid).live;
            }
            match self.child.wait().await {
                Ok(status) => self.reaped = Some(status),
                Err(error) => {
                    tracing::warn!(pid = self.record.pid, kind = ?error.kind(), "reaping the leg failed");
                }
            }
        } else {
            report.kill = Some(signal_group_on_evidence(
                &table,
                &signaller,
                pgid,
                ChildState::Reaped,
                GroupSignal::Kill,
            ));
        }
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.remove();
        }
        if !report.survivors.is_empty() {
            tracing::warn!(pgid, survivors = ?report.survivors, "group members survived SIGKILL");
        }
        tracing::info!(pid = self.record.pid, status = ?self.reaped, "leg ended");
        self.ended = true;
        self.teardown = Some(report.clone());
        report
    }

    /// Whether the direct child has exited, without reaping it.
    fn leader_exited(&self) -> bool {
        if self.reaped.is_some() {
            return true;
        }
        if let Some(fd) = &self.pidfd {
            return fd.exited();
        }
        let Some(pid) = rustix::process::Pid::from_raw(self.record.pid) else {
            return false;
        };
        let options = rustix::process::WaitIdOptions::EXITED
            | rustix::process::WaitIdOptions::NOWAIT
            | rustix::process::WaitIdOptions::NOHANG;
        matches!(
            rustix::process::waitid(rustix::process::WaitId::Pid(pid), options),
            Ok(Some(_))
        )
    }

    async fn wait_leader_exit(&mut self) {
        if let Some(fd) = &self.pidfd {
            fd.wait_exit().await;
            return;
        }
        while !self.leader_exited() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Polls until the leader has exited and the group has no live member
    /// (proven by a complete scan), or the deadline passes.
    async fn wait_group_quiet(&mut self, deadline: Instant) -> bool {
        let mut interval = Duration::from_millis(1);
        loop {
            if self.group_quiet() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            tokio::time::sleep(interval.min(deadline - now)).await;
            interval = (interval * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether the leader has exited and the group is proven to have no
    /// live member (a complete scan) and the cgroup, if any, is empty. The
    /// cheap checks come first: the `/proc` scan runs only when they pass.
    fn group_quiet(&self) -> bool {
        if !self.leader_exited() || self.cgroup_populated() {
            return false;
        }
        let scan = ProcTable.scan_group(self.record.pgid);
        scan.complete && scan.live.is_empty()
    }

    fn cgroup_populated(&self) -> bool {
        self.cgroup.as_ref().is_some_and(LegCgroup::populated)
    }

    /// Signals the direct child through its pidfd, which cannot reach a
    /// recycled pid; this also reaches a leader that left its own group.
    fn signal_leader(&self, signal: GroupSignal) {
        if let Some(fd) = &self.pidfd {
            fd.signal(signal);
        }
    }

    fn start_stderr_reader(&mut self) {
        let Some(mut stderr) = self.stderr.take() else {
            return;
        };
        let tail = Arc::clone(&self.stderr_tail);
        // Enough more than the tail that a value cut at the front of the
        // buffer cannot reach the part returned (see `redact_tail`).
        let limit = self
            .stderr_tail_len
            .saturating_add(self.redactor.longest().saturating_sub(1));
        self.stderr_task = Some(tokio::spawn(async move {
            let mut chunk = vec![0u8; 8 * 1024];
            loop {
                match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let Ok(mut tail) = tail.lock() else { return };
                        tail.extend(&chunk[..n]);
                        let excess = tail.len().saturating_sub(limit);
                        tail.drain(..excess);
                    }
                }
            }
        }));
    }
}

/// Renders identity and state only: buffered output and pipes stay out.
impl std::fmt::Debug for Leg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leg")
            .field("record", &self.record)
            .field("containment", &self.containment())
            .field("pidfd", &self.pidfd.is_some())
            .field("orphan_guard", &self.sentinel.is_some())
            .field("reaped", &self.reaped)
            .field("ended", &self.ended)
            .field("watchdogs", &self.watchdogs)
            .finish_non_exhaustive()
    }
}

impl Drop for Leg {
    fn drop(&mut self) {
        if let Some(task) = &self.stderr_task {
            task.abort();
        }
        if let Some(mut moving) = self.cgroup_move.take() {
            // Joined before the child handle goes: the move names its pid.
            let moved = moving.wait_blocking();
            self.cgroup = moving.conclude(moved);
        }
        if self.ended {
            return;
        }
        // The backstop: no await, so nothing can interpose. Same evidence
        // rule as the graceful pass: an unreaped leader pins the group id; a
        // reaped one needs a live member.
        let state = if self.reaped.is_some() {
            ChildState::Reaped
        } else {
            ChildState::Unreaped
        };
        let outcome = signal_group_on_evidence(
            &ProcTable,
            &OsSignaller,
            self.record.pgid,
            state,
            GroupSignal::Kill,
        );
        self.signal_leader(GroupSignal::Kill);
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.kill();
            cgroup.remove();
        }
        tracing::info!(
            pid = self.record.pid,
            ?outcome,
            "leg dropped before teardown completed; backstop ran"
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum WatchdogKind {
    FirstOutput(Duration),
    Idle(Duration),
    Total(Duration),
}

impl WatchdogKind {
    fn into_error(self) -> Error {
        match self {
            Self::FirstOutput(after) => Error::FirstOutputTimeout { after },
            Self::Idle(after) => Error::IdleTimeout { after },
            Self::Total(after) => Error::DeadlineExceeded { after },
        }
    }
}

/// The redactor of a leg: the spec's own values, every value the secret
/// lookup put into the environment or found already set there, and every
/// variable of the environment the child gets whose name looks secret.
fn leg_redactor(spec: &LegSpec, secrets: &SecretResolution) -> Redactor {
    let named = |name: &std::ffi::OsStr| {
        let name = name.to_string_lossy();
        looks_secret_name(&name)
            || secrets.resolved.iter().any(|n| *n == name)
            || secrets.already_set.iter().any(|n| *n == name)
    };
    let mut redactor = spec.redact.clone();
    match &spec.env {
        EnvPolicy::Explicit(env) => {
            redactor.extend(env.iter().filter(|(k, _)| named(k)).map(|(_, v)| v));
        }
        EnvPolicy::Inherit => {
            redactor.extend(
                std::env::vars_os()
                    .filter(|(k, _)| named(k))
                    .map(|(_, v)| v),
            );
        }
    }
    redactor
}

fn snapshot(tail: &Mutex<VecDeque<u8>>) -> Vec<u8> {
    match tail.lock() {
        Ok(tail) => tail.iter().copied().collect(),
        Err(poisoned) => poisoned.into_inner().iter().copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Leg, PIPE_CAPACITY};
    use crate::LegSpec;

    /// The kernel's default pipe capacity.
    const DEFAULT_PIPE: usize = 64 * 1024;

    #[tokio::test]
    async fn stdout_pipe_is_widened_where_the_kernel_allows() {
        let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .expect("pipe-max-size")
            .trim()
            .parse()
            .expect("a number");
        let leg = Leg::spawn(LegSpec::new(["sleep", "5"]))
            .await
            .expect("spawn");
        let stdout = leg.stdout.as_ref().expect("stdout piped");
        let size = rustix::pipe::fcntl_getpipe_size(stdout).expect("pipe size");
        if max >= PIPE_CAPACITY {
            assert!(size >= PIPE_CAPACITY, "pipe capacity {size}");
        } else {
            assert!(size >= DEFAULT_PIPE, "pipe capacity {size}");
        }
        leg.end().await.expect("end");
    }
}
