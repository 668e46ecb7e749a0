//! What to run: the leg spec and its watchdog settings.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use crate::cgroup::ContainmentPolicy;
use crate::env::{EnvPolicy, OnSpawn};
use crate::error::Error;
use crate::ndjson::LineFormat;
use crate::redact::Redactor;
use crate::secrets::LookupConfig;

/// Everything needed to spawn one leg. Provider-neutral: a provider adapter
/// builds the argv and declares `streams_first_output_early`.
#[derive(Debug)]
pub struct LegSpec {
    /// Program and arguments; never run through a shell.
    pub argv: Vec<OsString>,
    /// Working directory; `None` keeps this process's.
    pub cwd: Option<PathBuf>,
    /// What the child's stdin is.
    pub stdin: StdinPolicy,
    /// Which environment the child gets.
    pub env: EnvPolicy,
    /// Called exactly once with the spawn record before any output is read.
    pub on_spawn: Option<OnSpawn>,
    /// The global `secrets.lookup` configuration; declared, unset variables
    /// are looked up into the child's environment once per spawn.
    pub secret_lookup: LookupConfig,
    /// Whether to also contain the leg in a cgroup of its own.
    pub containment: ContainmentPolicy,
    /// Whether the transport emits its first line shortly after spawn. Only
    /// then are the default watchdogs (`default_watchdogs`) applied.
    pub streams_first_output_early: bool,
    /// The default first-output and idle watchdogs, applied only when
    /// `streams_first_output_early` is true.
    pub default_watchdogs: Watchdogs,
    /// Watchdogs the operator set explicitly; these apply whatever the
    /// transport declares.
    pub explicit_watchdogs: Watchdogs,
    /// The longest stdout line kept, in bytes; longer lines become
    /// [`Event::LineTooLong`](crate::Event::LineTooLong) and are discarded.
    pub max_line_len: usize,
    /// Whether lines arrive parsed ([`LineFormat::Value`]) or validated text.
    pub line_format: LineFormat,
    /// How long teardown waits after SIGTERM before SIGKILL.
    pub grace: Duration,
    /// How many trailing stderr bytes are kept for error reports.
    pub stderr_tail_len: usize,
    /// The orphan guard: when set, a sentinel process joins the leg's group
    /// and, should this process die while the leg runs, ends the group
    /// (SIGTERM, this grace, `cgroup.kill` if the leg has a cgroup,
    /// SIGKILL). `None` (the default): only the leader's parent-death
    /// signal covers a supervisor death, and descendants survive it.
    pub orphan_guard: Option<Duration>,
    /// Values put into the child's environment or files that must never
    /// come back out of it (a forwarded MCP server's env, say). The leg
    /// adds the secrets it can see itself (see
    /// [`Leg::redactor`](crate::Leg::redactor)) and redacts its stderr
    /// tail and every stdout event against the whole set.
    pub redact: Redactor,
}

impl Default for LegSpec {
    fn default() -> Self {
        Self {
            argv: Vec::new(),
            cwd: None,
            stdin: StdinPolicy::Null,
            env: EnvPolicy::Inherit,
            on_spawn: None,
            secret_lookup: LookupConfig::NotConfigured,
            containment: ContainmentPolicy::ProcessGroup,
            streams_first_output_early: false,
            default_watchdogs: Watchdogs::default(),
            explicit_watchdogs: Watchdogs::NONE,
            max_line_len: 16 * 1024 * 1024,
            line_format: LineFormat::Value,
            grace: Duration::from_secs(5),
            stderr_tail_len: 16 * 1024,
            orphan_guard: None,
            redact: Redactor::new(),
        }
    }
}

impl LegSpec {
    /// A spec running `argv` with every other field at its default.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Self {
            argv: argv.into_iter().map(|s| s.as_ref().to_owned()).collect(),
            ..Self::default()
        }
    }

    /// The watchdogs that apply to this leg: explicit ones always, default
    /// ones only for transports that stream their first output early (a
    /// buffered transport's slow-but-healthy call looks dead to them).
    pub fn effective_watchdogs(&self) -> Watchdogs {
        let defaults = if self.streams_first_output_early {
            self.default_watchdogs
        } else {
            Watchdogs::NONE
        };
        Watchdogs {
            first_output: self
                .explicit_watchdogs
                .first_output
                .or(defaults.first_output),
            idle: self.explicit_watchdogs.idle.or(defaults.idle),
            // A deadline is not a liveness guess: it holds for every
            // transport, buffered ones too.
            total: self
                .explicit_watchdogs
                .total
                .or(self.default_watchdogs.total),
        }
    }
}

/// What the child's stdin is connected to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StdinPolicy {
    /// `/dev/null`.
    #[default]
    Null,
    /// This process's stdin.
    Inherit,
    /// A pipe the caller takes with [`Leg::take_stdin`](crate::Leg::take_stdin).
    Piped,
}

/// First-output and idle (between-chunk) timeouts; `None` disables one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watchdogs {
    /// Time allowed from spawn to the first stdout byte.
    pub first_output: Option<Duration>,
    /// Time allowed between two stdout reads.
    pub idle: Option<Duration>,
    /// Time allowed from spawn to the end of the leg's output, whatever it
    /// prints meanwhile (`lionrt run --timeout`); when it passes, the leg's
    /// group is ended and the run ends `timed_out`
    /// (`run.timed_out.deadline`).
    pub total: Option<Duration>,
}

impl Watchdogs {
    /// The first-output timeout variable, in seconds.
    pub const LIVENESS_VAR: &'static str = "LIONAGI_WORKER_LIVENESS_TIMEOUT";
    /// The idle timeout variable, in seconds.
    pub const IDLE_VAR: &'static str = "LIONAGI_WORKER_IDLE_TIMEOUT";
    /// The built-in first-output default when the variable is unset.
    pub const DEFAULT_FIRST_OUTPUT: Duration = Duration::from_secs(180);
    /// The built-in idle default when the variable is unset.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(900);
    /// No watchdogs.
    pub const NONE: Self = Self {
        first_output: None,
        idle: None,
        total: None,
    };

    /// Defaults read from `LIONAGI_WORKER_LIVENESS_TIMEOUT` and
    /// `LIONAGI_WORKER_IDLE_TIMEOUT` (seconds, fractional allowed; `0`
    /// disables). Unset variables keep the built-in defaults.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// [`Watchdogs::from_env`] over any variable source (tests use a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Self, Error> {
        Ok(Self {
            first_output: parse_seconds(Self::LIVENESS_VAR, lookup(Self::LIVENESS_VAR))?
                .unwrap_or(Some(Self::DEFAULT_FIRST_OUTPUT)),
            idle: parse_seconds(Self::IDLE_VAR, lookup(Self::IDLE_VAR))?
                .unwrap_or(Some(Self::DEFAULT_IDLE)),
            total: None,
        })
    }
}

impl Default for Watchdogs {
    fn default() -> Self {
        Self {
            first_output: Some(Self::DEFAULT_FIRST_OUTPUT),
            idle: Some(Self::DEFAULT_IDLE),
            total: None,
        }
    }
}

/// `None` when unset; `Some(None)` when set to zero (disabled).
fn parse_seconds(
    var: &'static str,
    raw: Option<OsString>,
) -> Result<Option<Option<Duration>>, Error> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.to_str().map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Ok(None);
    }
    let seconds: f64 = text
        .parse()
        .map_err(|_| Error::InvalidWatchdogSetting { var })?;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(Error::InvalidWatchdogSetting { var });
    }
    if seconds == 0.0 {
        return Ok(Some(None));
    }
    Duration::try_from_secs_f64(seconds)
        .map(|d| Some(Some(d)))
        .map_err(|_| Error::InvalidWatchdogSetting { var })
}
