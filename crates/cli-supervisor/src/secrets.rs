//! Secret lookup: fill declared variables into a child's environment from a
//! machine-level secret store named in the global `settings.yaml`. The
//! section is parsed and validated by `runtime-settings` (the one owner of
//! that file); its types are re-exported here.
//!
//! ```yaml
//! secrets:
//!   lookup:
//!     argv: [security, find-generic-password, -s, "{name}", -a, lionagi, -w]
//!     names: [OPENROUTER_API_KEY]
//! ```
//!
//! Only the global settings file is read: a project-local file is whatever
//! tree is checked out, and a repository must not name the program that reads
//! this machine's secret store. A looked-up value reaches the child's
//! environment and nothing else: lookup logs carry the program name, the
//! variable name and the exit status only, and stdout is discarded on every
//! failure path.
//!
//! Readings of points the spec leaves open (Ambiguities B.4), each the one
//! that fails closed:
//! - With an inheriting environment, a variable set in this process counts as
//!   "already has a value" (the child would see it) and is never looked up.
//! - With an inheriting environment and at least one resolved secret, the
//!   child gets this process's environment plus the resolved variables.
//! - `reason` is set only for a configuration that was refused; a lookup
//!   command that runs and fails is not a refusal (it is listed in `failed`).
//! - One trailing newline (`\n` or `\r\n`) is trimmed; an empty value counts
//!   as a failed lookup. Each lookup is bounded by a timeout.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use runtime_settings::PLACEHOLDER;
pub use runtime_settings::{LookupConfig, SecretLookup, SettingsFile, parse_secret_lookup, reason};

use crate::env::{ChildEnv, EnvPolicy};
use crate::redact::Redactor;

/// What secret filling did to an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecretResolution {
    /// The environment to spawn with (unchanged when nothing was resolved).
    pub env: EnvPolicy,
    /// Set iff a lookup was configured and refused; a stable identifier.
    pub reason: Option<&'static str>,
    /// Names whose value was looked up and added.
    pub resolved: Vec<String>,
    /// Names whose lookup failed (the child will lack them).
    pub failed: Vec<String>,
    /// Names skipped because they already had a value.
    pub already_set: Vec<String>,
}

/// Adds each declared, unset variable to `env` by running the lookup
/// command. Purely additive: nothing configured returns `env` unchanged
/// (`Inherit` stays `Inherit`), and a failed lookup leaves the variable out.
///
/// Readings of what the spec leaves open (Ambiguities B.4), each the one
/// that fails closed: with `Inherit`, a variable set in this process counts
/// as already set; with `Inherit` and a resolved secret the child gets this
/// process's environment plus the secret; `reason` is set only for a refused
/// configuration (a store that runs and fails is listed in `failed`); one
/// trailing newline is trimmed, an empty value is a failure, and each lookup
/// is bounded by [`SecretLookup::DEFAULT_TIMEOUT`].
pub async fn fill_declared_secrets(config: &LookupConfig, env: EnvPolicy) -> SecretResolution {
    let mut resolution = SecretResolution {
        env,
        reason: None,
        resolved: Vec::new(),
        failed: Vec::new(),
        already_set: Vec::new(),
    };
    let lookup = match config {
        LookupConfig::NotConfigured | LookupConfig::Disabled => return resolution,
        LookupConfig::Rejected(why) => {
            tracing::warn!(reason = why, "secrets.lookup refused");
            resolution.reason = Some(why);
            return resolution;
        }
        LookupConfig::Ready(lookup) => lookup,
    };
    let mut found: Vec<(String, OsString)> = Vec::new();
    for name in lookup.names() {
        let already = match &resolution.env {
            EnvPolicy::Inherit => std::env::var_os(name).is_some(),
            EnvPolicy::Explicit(env) => env.contains(name),
        };
        if already || found.iter().any(|(n, _)| n == name) {
            resolution.already_set.push(name.clone());
            continue;
        }
        match run_lookup(lookup, name).await {
            Some(value) => found.push((name.clone(), value)),
            None => resolution.failed.push(name.clone()),
        }
    }
    if found.is_empty() {
        return resolution;
    }
    let mut env = match std::mem::take(&mut resolution.env) {
        EnvPolicy::Inherit => ChildEnv::from_current_process(),
        EnvPolicy::Explicit(env) => env,
    };
    for (name, value) in found {
        match env.insert(name.clone(), value) {
            Ok(()) => resolution.resolved.push(name),
            Err(_) => resolution.failed.push(name),
        }
    }
    resolution.env = EnvPolicy::Explicit(env);
    resolution
}

/// A redactor for the variables `config` names that are set in this
/// process: they are secrets by the settings' word whether or not a lookup
/// filled them, so a child that inherits one (an MCP server, any leg
/// spawned without the lookup) must not hand it back. Empty when no lookup
/// is configured (or one was refused: its names are not known).
pub fn inherited_secrets(config: &LookupConfig) -> Redactor {
    match config {
        LookupConfig::Ready(lookup) => {
            Redactor::from_values(lookup.names().iter().filter_map(std::env::var_os))
        }
        _ => Redactor::new(),
    }
}

/// Runs one lookup; the value on success, `None` (stdout discarded) on any failure.
async fn run_lookup(lookup: &SecretLookup, name: &str) -> Option<OsString> {
    let (program, args) = lookup.argv().split_first()?;
    let program_name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = Command::new(program);
    command
        .args(args.iter().map(|arg| arg.replace(PLACEHOLDER, name)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            tracing::warn!(program = %program_name, name, kind = ?error.kind(), "secret lookup failed to start");
            return None;
        }
    };
    let mut stdout = child.stdout.take()?;
    let run = async {
        let mut out = Vec::new();
        let read = (&mut stdout).take(1024 * 1024).read_to_end(&mut out).await;
        let status = child.wait().await;
        (read, status, out)
    };
    let (read, status, mut out) = match tokio::time::timeout(lookup.timeout(), run).await {
        Ok(done) => done,
        Err(_) => {
            tracing::warn!(program = %program_name, name, "secret lookup timed out");
            return None;
        }
    };
    let status = match (read, status) {
        (Ok(_), Ok(status)) => status,
        _ => {
            tracing::warn!(program = %program_name, name, "secret lookup i/o failed");
            return None;
        }
    };
    if !status.success() {
        out.fill(0);
        tracing::warn!(program = %program_name, name, status = status.code(), "secret lookup exited unsuccessfully");
        return None;
    }
    if out.ends_with(b"\n") {
        out.pop();
        if out.ends_with(b"\r") {
            out.pop();
        }
    }
    if out.is_empty() || out.contains(&0) {
        tracing::warn!(program = %program_name, name, status = status.code(), "secret lookup printed no usable value");
        return None;
    }
    tracing::info!(program = %program_name, name, status = status.code(), "secret looked up");
    use std::os::unix::ffi::OsStringExt;
    Some(OsString::from_vec(out))
}
