//! Spawn, stream and end agent CLI legs without orphans or stray signals.
//!
//! A *leg* is one run of an agent CLI as a child process. [`Leg::spawn`]
//! starts it from a provider-neutral [`LegSpec`] (argv, never a shell; cwd;
//! stdin policy; an inherited or explicit environment) as the leader of its
//! own process group, hands a [`SpawnedProcess`] record to an optional
//! [`OnSpawn`] callback before any output is read, and then yields stdout as
//! [`Event`]s, one per NDJSON line, with over-long lines and invalid JSON as
//! typed events so memory stays bounded whatever the child writes.
//!
//! Ending a leg ([`Leg::end`], [`Leg::wait`], a watchdog, a failed
//! `on_spawn`) always goes through one routine: SIGTERM to the group, a
//! grace period, then SIGKILL to anyone still in it, including a descendant
//! left behind by a leader that already exited. Every group signal passes
//! [`signal_group_on_evidence`]: it is sent only while the leader is
//! unreaped (its pid pins the group id) or while the group has a live
//! member. Dropping a `Leg` whose teardown did not finish, which is what
//! cancelling any future that owns it does, runs a synchronous SIGKILL
//! backstop under the same rule. The direct child is also signalled through
//! a pidfd where the kernel has one (Linux 5.3+), which cannot reach a
//! recycled pid.
//!
//! **Seam:** the input is a plain [`LegSpec`]; a provider adapter (a later
//! crate) builds it and interprets the [`Event`]s. This crate knows no
//! provider by name.
//!
//! **Beyond the original:** creating the child is synchronous, so there is
//! no await point between the OS creating it and the caller holding a handle
//! whose Drop ends it; the original's "cancelled inside process creation"
//! hole does not exist here. **Stated limit:** a process group is not a
//! containment boundary; a descendant that calls `setsid()` leaves it and is
//! not ended.
//!
//! Secrets: [`fill_declared_secrets`] adds variables named in the global
//! settings file's `secrets.lookup` to a child environment (see
//! [`SettingsFile`]). Runtime-only values ([`ChildEnv`], [`OnSpawn`]) render
//! as placeholders (`<env: N variable(s)>`, `<on_spawn>`) in Debug, Display,
//! serde output and error messages. They are the one set of carriers in the
//! workspace: providers-core re-exports them for request types and
//! endpoints, so the value a caller sets is the value a leg is spawned
//! with. An [`OnSpawn`] is cloneable (clones share the callback and compare
//! equal by identity) and a leg calls it once.
//!
//! Redaction: whatever a leg writes back passes through its [`Redactor`]
//! before a caller sees it (every stdout event, the stderr tail). The set
//! is every value `secrets.lookup` put into the child's environment or
//! found already there, every variable of that environment whose name
//! looks secret ([`looks_secret_name`]) and whatever the caller registers
//! ([`LegSpec::redact`]: a forwarded MCP server's env, say), so the spec's
//! rule that no surface carries a secret the runtime handed to a child
//! holds for every record, report and log line built from leg output.
//! The replacement follows the spec's notify rules (NTF-025..027): every
//! occurrence, longest first, values under [`MIN_REDACTABLE_LEN`]
//! characters kept, [`REDACTED`] in their place; JSON-escaped forms of a
//! value are found too.
//!
//! # Decisions where the spec is open
//!
//! - **Teardown keeps the leader unreaped until the group is empty.** Exit
//!   is observed through the pidfd (or `waitid(WNOWAIT)`) without reaping,
//!   so every SIGTERM/SIGKILL of a normal teardown rests on the strongest
//!   evidence (an unreaped leader pins the group id); the after-reap branch
//!   of the evidence rule is what the Drop backstop and other callers use.
//! - **Zombies are not live members.** After the reap, only a non-zombie
//!   member counts as evidence; a zombie-only group is treated as empty.
//! - **Pid guard (Ambiguities B.3):** the one group-signalling function
//!   refuses group ids ≤ 1 and this process's own group.
//! - **Watchdogs (B.5):** `LIONAGI_WORKER_LIVENESS_TIMEOUT` and
//!   `LIONAGI_WORKER_IDLE_TIMEOUT` set the *default* timeouts in seconds
//!   (`0` disables; unset means 180 s and 900 s), read only through
//!   [`Watchdogs::from_env`]. Defaults apply only when the transport declares
//!   `streams_first_output_early`; watchdogs set explicitly
//!   ([`LegSpec::explicit_watchdogs`]) apply regardless. A watchdog that
//!   fires ends the leg's group before the error is returned.
//! - **Secrets (B.4):** see [`fill_declared_secrets`] and [`SettingsFile`].
//! - **Supervisor death:** every leg is forked by one long-lived spawner
//!   thread with `PR_SET_PDEATHSIG` = SIGKILL set between fork and exec (the
//!   signal fires when the forking *thread* exits, so a tokio worker or
//!   blocking-pool thread would kill legs early). The `pre_exec` hook is
//!   unsafe in std and tokio; `spawner.rs` allows `unsafe_code` locally with
//!   a `// SAFETY:` reason (two raw syscalls, no allocation), as `pidfd.rs`
//!   does for the reactor. The leader only: its descendants are re-parented.
//!   [`LegSpec::orphan_guard`] adds a sentinel (`/bin/sh`) to the leg's
//!   group that blocks on a pipe only this process can write; when this
//!   process dies the pipe reads end-of-file and the sentinel sends SIGTERM
//!   to its own group, waits the grace, writes `cgroup.kill` if the leg has
//!   a cgroup, and sends SIGKILL. Signalling its own group needs no
//!   evidence (it is a live member, so the id cannot have been reissued);
//!   this is the one group signal not sent through
//!   [`signal_group_on_evidence`]. A normal teardown dismisses it first.
//! - **Containment:** process group by default; [`ContainmentPolicy`] opts
//!   into a cgroup of its own where cgroup v2 is writable. The leg is moved
//!   right after spawn (no `pre_exec`), so a descendant forked in the first
//!   instants stays outside the cgroup but inside the process group.
//!
//! # Performance
//!
//! `cargo bench -p cli-supervisor -- ndjson_100mb` reads 100 MB of ~200-byte
//! lines from `cat` beside the floor (`cat` into a plain tokio line reader),
//! each run of one followed by an untimed run of the other so both see the
//! same load. On a shared 2-core machine [`LineFormat::Raw`] reached 84-85% of
//! the floor (81.3 ms vs 69.2 ms; a standalone A/B runner gave 85-92%), and
//! [`LineFormat::Value`] 95% of a floor that also parses into
//! `serde_json::Value` (224.8 ms vs 214.6 ms; 31% of the plain floor:
//! building the `Value` is the cost). Three things got `Raw` there from
//! 64-72%: the control-byte check rides on the newline search (one pass
//! per line), long string runs are skipped with `memchr2`, and the stdout
//! pipe is widened to 1 MiB (best effort, `F_SETPIPE_SZ`) and read 256 KiB
//! at a time, so the writer blocks and wakes the reader less often (worth
//! 8-10 points in an A/B run on its own). A later run on a noisier
//! machine gave 74% (92.9 ms vs 68.9 ms).
//!
//! # Example
//!
//! ```
//! use cli_supervisor::{Event, Leg, LegSpec};
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     // A stand-in agent CLI printing two NDJSON lines (the script is argv, not interpolated).
//!     let spec = LegSpec::new(["/bin/sh", "-c", r#"echo '{"type":"init"}'; echo '{"type":"done"}'"#]);
//!     let mut leg = Leg::spawn(spec).await?;
//!     let mut types = Vec::new();
//!     while let Some(event) = leg.next_event().await? {
//!         if let Event::Json { value, .. } = event {
//!             types.push(value["type"].as_str().unwrap_or_default().to_owned());
//!         }
//!     }
//!     let exit = leg.wait().await?;
//!     assert!(exit.status.success());
//!     assert_eq!(types, ["init", "done"]);
//!     Ok::<(), cli_supervisor::Error>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None; Linux only (process groups, `/proc`, pidfd).

mod cgroup;
mod env;
mod error;
mod guard;
mod leg;
mod ndjson;
mod pidfd;
mod proc;
mod redact;
mod secrets;
mod sentinel;
mod spawner;
mod spec;

pub use cgroup::{Containment, ContainmentPolicy};
pub use env::{ChildEnv, EnvPolicy, OnSpawn};
pub use error::{BadEnvEntry, BoxError, Error, Result};
pub use guard::{
    ChildState, Evidence, GroupSignal, OsSignaller, SignalOutcome, Signaller,
    signal_group_on_evidence, signal_recorded_group,
};
pub use leg::{Leg, LegExit, Teardown};
pub use ndjson::{Event, LineFormat};
pub use proc::{GroupScan, ProcTable, ProcessTable, SpawnedProcess, observe_spawned};
pub use redact::{MIN_REDACTABLE_LEN, REDACTED, Redactor, looks_secret_name};
pub use secrets::{
    LookupConfig, SecretLookup, SecretResolution, SettingsFile, fill_declared_secrets,
    inherited_secrets, parse_secret_lookup, reason,
};
pub use spec::{LegSpec, StdinPolicy, Watchdogs};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
