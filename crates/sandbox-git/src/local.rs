//! The local-worktree backend: sandboxes are git worktrees on this host.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::backend::{
    Capabilities, Cell, CellOutput, ExecCell, PromptProvider, ProvisionRequest, ProvisionedSandbox,
    SandboxBackend,
};
use crate::error::Error;
use crate::session::{CreateOptions, create_sandbox};

/// The host variables every exec cell gets when they are set on the host.
pub const SAFE_ENV_KEYS: [&str; 4] = ["PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV"];

/// A snapshot of the host environment that exec cells may draw from.
///
/// The library never reads the process environment by itself: the binary
/// calls [`HostEnv::from_process`], tests build one with
/// [`HostEnv::from_pairs`]. `Debug` shows names only, never values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HostEnv {
    vars: BTreeMap<OsString, OsString>,
}

impl HostEnv {
    /// The current process environment.
    pub fn from_process() -> Self {
        HostEnv {
            vars: std::env::vars_os().collect(),
        }
    }

    /// An environment of these pairs.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        HostEnv {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// One variable.
    pub fn get(&self, key: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(key)).map(OsString::as_os_str)
    }
}

impl fmt::Debug for HostEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

/// Settings of [`LocalWorktreeBackend`].
#[derive(Debug, Clone, Default)]
pub struct LocalWorktreeConfig {
    /// The repository sandboxes are made in.
    pub repo_root: PathBuf,
    /// Where worktrees go; see [`CreateOptions::worktrees_dir`].
    pub worktrees_dir: Option<PathBuf>,
    /// The host environment exec cells draw `PATH`, `HOME`, `PYTHONPATH`,
    /// `VIRTUAL_ENV` and allow-listed names from.
    pub host_env: HostEnv,
}

/// Sandboxes as local git worktrees. Exec cells run as host processes with
/// the worktree as working directory and a scoped environment; this is no
/// network or filesystem isolation, and its [`Capabilities`] say so.
#[derive(Clone)]
pub struct LocalWorktreeBackend {
    config: LocalWorktreeConfig,
    prompt: Option<Arc<dyn PromptProvider>>,
}

impl fmt::Debug for LocalWorktreeBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalWorktreeBackend")
            .field("config", &self.config)
            .field("prompt_cells", &self.prompt.is_some())
            .finish()
    }
}

impl LocalWorktreeBackend {
    /// A backend without prompt cells.
    pub fn new(config: LocalWorktreeConfig) -> Self {
        LocalWorktreeBackend {
            config,
            prompt: None,
        }
    }

    /// Answers prompt cells with `provider`, host-side.
    #[must_use]
    pub fn with_prompt_provider(mut self, provider: Arc<dyn PromptProvider>) -> Self {
        self.prompt = Some(provider);
        self
    }

    /// The environment an exec cell's process gets (and nothing else).
    pub fn cell_env(&self, cell: &ExecCell) -> BTreeMap<OsString, OsString> {
        let host = &self.config.host_env;
        let mut env = BTreeMap::new();
        for key in SAFE_ENV_KEYS
            .iter()
            .copied()
            .chain(cell.allow_host_env.iter().map(String::as_str))
        {
            if let Some(value) = host.get(key) {
                env.insert(OsString::from(key), value.to_owned());
            }
        }
        for (key, value) in &cell.env {
            env.insert(OsString::from(key), OsString::from(value.expose()));
        }
        env
    }

    fn run_exec(&self, sandbox: &ProvisionedSandbox, cell: &ExecCell) -> Result<CellOutput, Error> {
        let Some((program, args)) = cell.argv.split_first() else {
            return Err(Error::CellRefused {
                reason: "exec cell has an empty argv",
            });
        };
        let env = self.cell_env(cell);
        // env_clear() first: the child must never inherit the host
        // environment wholesale (a credential-leak vector). PATH for the
        // program lookup comes from the scoped map as well.
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(&sandbox.workdir)
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null());
        let output = command.output().map_err(|source| Error::CellSpawn {
            program: program.clone(),
            cwd: sandbox.workdir.clone(),
            source,
        })?;
        tracing::debug!(exit_code = output.status.code(), "exec cell exited");
        Ok(CellOutput::Exec {
            exit_code: output.status.code(),
            stdout: output.stdout,
            stderr: output.stderr,
        })
    }
}

impl SandboxBackend for LocalWorktreeBackend {
    #[tracing::instrument(skip_all)]
    fn provision(&self, request: &ProvisionRequest) -> Result<ProvisionedSandbox, Error> {
        let options = CreateOptions {
            id: request.id.clone(),
            worktrees_dir: self.config.worktrees_dir.clone(),
        };
        let session = create_sandbox(&self.config.repo_root, &options)?;
        Ok(ProvisionedSandbox {
            id: session.id.clone(),
            workdir: session.worktree_path.clone(),
            session: Some(session),
        })
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            exec_cells: true,
            prompt_cells: self.prompt.is_some(),
            secret_injection: true,
            network_isolated: false,
            filesystem_isolated: false,
            git_merge: true,
        }
    }

    #[tracing::instrument(skip_all, fields(id = %sandbox.id))]
    fn run_cell(&self, sandbox: &ProvisionedSandbox, cell: &Cell) -> Result<CellOutput, Error> {
        match cell {
            Cell::Prompt(p) => {
                let provider = self.prompt.as_ref().ok_or(Error::CellRefused {
                    reason: "backend has no prompt provider",
                })?;
                // Host-side: no process is started in the box and nothing is
                // written to it.
                let text = provider
                    .complete(&p.prompt, sandbox)
                    .map_err(|source| Error::Prompt { source })?;
                Ok(CellOutput::Prompt { text })
            }
            Cell::Exec(e) => self.run_exec(sandbox, e),
        }
    }
}
