//! The sandbox backend seam: `provision`, `capabilities`, `run_cell`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::session::SandboxSession;

/// A place where agent work runs: a local git worktree today, a remote box
/// (Daytona or similar) later.
///
/// Backend differences live only in [`SandboxBackend::provision`] and
/// [`SandboxBackend::capabilities`]; [`SandboxBackend::run_cell`] has this
/// one signature for every backend. Callers decide what a backend can do
/// from its [`Capabilities`] (see [`admit_cell`]) and never from its type or
/// name; the trait deliberately has no `name()`.
///
/// The trait is synchronous: `run_cell` blocks until the cell's process
/// exits. Async callers run it on a blocking thread (`spawn_blocking`).
pub trait SandboxBackend {
    /// Makes a fresh sandbox.
    ///
    /// # Errors
    /// Backend-specific failures to create the sandbox.
    fn provision(&self, request: &ProvisionRequest) -> Result<ProvisionedSandbox, Error>;

    /// What this backend can do. Stable for the backend's lifetime.
    fn capabilities(&self) -> Capabilities;

    /// Runs one cell in (or, for a prompt cell, beside) the sandbox.
    ///
    /// # Errors
    /// [`Error::CellRefused`] for a cell kind the backend cannot run,
    /// [`Error::CellSpawn`] and [`Error::Prompt`] for failures to run it. A
    /// program that runs and exits non-zero is not an error.
    fn run_cell(&self, sandbox: &ProvisionedSandbox, cell: &Cell) -> Result<CellOutput, Error>;
}

/// What [`SandboxBackend::provision`] is asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvisionRequest {
    /// A sandbox id to use; `None` lets the backend choose.
    pub id: Option<String>,
}

/// A provisioned sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvisionedSandbox {
    /// The sandbox id.
    pub id: String,
    /// The directory exec cells run in, as the backend sees it.
    pub workdir: PathBuf,
    /// The git sandbox behind it, for backends with
    /// [`Capabilities::git_merge`].
    pub session: Option<SandboxSession>,
}

/// What a backend can do. Every field is a fact about the backend callers may
/// branch on; two backends with equal capabilities are interchangeable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Capabilities {
    /// Runs exec cells (untrusted code in the box).
    pub exec_cells: bool,
    /// Runs prompt cells (a provider call made host-side).
    pub prompt_cells: bool,
    /// Exec cells can receive explicitly injected secrets.
    pub secret_injection: bool,
    /// Exec cells have no network access.
    pub network_isolated: bool,
    /// Exec cells cannot read or write outside their workdir.
    pub filesystem_isolated: bool,
    /// The sandbox is a git branch that can be merged back
    /// ([`crate::merge_sandbox`]).
    pub git_merge: bool,
}

/// A unit of work for [`SandboxBackend::run_cell`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cell {
    /// A provider call. It runs host-side, already authenticated; nothing of
    /// it (credentials included) enters the box, and the type has no field
    /// that could carry a secret in.
    Prompt(PromptCell),
    /// Untrusted code run inside the box. It gets only the scoped environment
    /// described on [`ExecCell`].
    Exec(ExecCell),
}

impl Cell {
    /// An exec cell running `argv` with no extra environment.
    pub fn exec<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Cell::Exec(ExecCell {
            argv: argv.into_iter().map(Into::into).collect(),
            ..ExecCell::default()
        })
    }

    /// A prompt cell.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        Cell::Prompt(PromptCell {
            prompt: prompt.into(),
        })
    }
}

/// A provider call made host-side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptCell {
    /// The prompt text.
    pub prompt: String,
}

/// Untrusted code run inside the box.
///
/// Its process environment is built from nothing: only `PATH`, `HOME`,
/// `PYTHONPATH` and `VIRTUAL_ENV` from the host (when set there), plus the
/// host variables named in `allow_host_env`, plus the values in `env`
/// (explicit injection, e.g. a token this one cell needs; these win on a name
/// clash). Nothing else of the host environment is ever inherited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecCell {
    /// Program and arguments; a bare program name is looked up on the scoped
    /// `PATH`.
    pub argv: Vec<String>,
    /// Variables injected explicitly, secrets included.
    pub env: BTreeMap<String, SecretValue>,
    /// Host variables this cell may see, by name.
    pub allow_host_env: Vec<String>,
}

/// A value that may be a secret: its `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        SecretValue(value.into())
    }

    /// The value, for handing to the child process only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// What a cell produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CellOutput {
    /// A prompt cell's reply.
    Prompt {
        /// The provider's text.
        text: String,
    },
    /// An exec cell's result.
    Exec {
        /// The exit code; `None` when killed by a signal.
        exit_code: Option<i32>,
        /// Captured standard output.
        stdout: Vec<u8>,
        /// Captured standard error.
        stderr: Vec<u8>,
    },
}

/// The host-side provider that answers prompt cells. It runs in the calling
/// process with its own credentials; the sandbox never sees them.
pub trait PromptProvider: Send + Sync {
    /// Answers `prompt` for work in `sandbox`.
    ///
    /// # Errors
    /// Whatever the provider fails with.
    fn complete(
        &self,
        prompt: &str,
        sandbox: &ProvisionedSandbox,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// The caller's requirements on where cells may run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CellPolicy {
    /// Exec cells need [`Capabilities::network_isolated`].
    pub exec_requires_network_isolation: bool,
    /// Exec cells need [`Capabilities::filesystem_isolated`].
    pub exec_requires_filesystem_isolation: bool,
}

/// Decides whether `cell` may run on `backend` under `policy`, from
/// [`SandboxBackend::capabilities`] alone: any two backends with the same
/// capabilities get the same answer, whatever they are.
///
/// # Errors
/// [`Error::CellRefused`] naming the missing capability.
pub fn admit_cell<B: SandboxBackend + ?Sized>(
    backend: &B,
    cell: &Cell,
    policy: &CellPolicy,
) -> Result<(), Error> {
    let caps = backend.capabilities();
    let refuse = |reason| Err(Error::CellRefused { reason });
    match cell {
        Cell::Prompt(_) if !caps.prompt_cells => refuse("backend cannot run prompt cells"),
        Cell::Prompt(_) => Ok(()),
        Cell::Exec(_) if !caps.exec_cells => refuse("backend cannot run exec cells"),
        Cell::Exec(e) if !e.env.is_empty() && !caps.secret_injection => {
            refuse("backend cannot inject explicit environment into exec cells")
        }
        Cell::Exec(_) if policy.exec_requires_network_isolation && !caps.network_isolated => {
            refuse("policy requires network isolation for exec cells")
        }
        Cell::Exec(_) if policy.exec_requires_filesystem_isolation && !caps.filesystem_isolated => {
            refuse("policy requires filesystem isolation for exec cells")
        }
        Cell::Exec(_) => Ok(()),
    }
}
