//! The backend seam: env scoping checked from inside the child, prompt
//! cells host-side, decisions from capabilities only.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sandbox_git::{
    Capabilities, Cell, CellOutput, CellPolicy, Error, ExecCell, HostEnv, LocalWorktreeBackend,
    LocalWorktreeConfig, PromptProvider, ProvisionRequest, ProvisionedSandbox, SandboxBackend,
    SecretValue, admit_cell, list_untracked_files,
};

use crate::support::TestRepo;

const CREDENTIAL: &str = "sk-host-credential-do-not-leak";

fn host_env() -> HostEnv {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    HostEnv::from_pairs::<_, OsString, OsString>([
        ("PATH".into(), path),
        ("HOME".into(), "/home/agent".into()),
        ("PYTHONPATH".into(), "/opt/py".into()),
        ("VIRTUAL_ENV".into(), "/opt/venv".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("ANTHROPIC_API_KEY".into(), CREDENTIAL.into()),
        ("AWS_SECRET_ACCESS_KEY".into(), CREDENTIAL.into()),
        ("GITHUB_TOKEN".into(), CREDENTIAL.into()),
    ])
}

fn backend(repo: &TestRepo, env: HostEnv) -> LocalWorktreeBackend {
    LocalWorktreeBackend::new(LocalWorktreeConfig {
        repo_root: repo.root.clone(),
        worktrees_dir: None,
        host_env: env,
    })
}

/// Runs `/usr/bin/env` as the cell and parses what the child saw.
fn child_env(
    backend: &LocalWorktreeBackend,
    sandbox: &ProvisionedSandbox,
    cell: ExecCell,
) -> BTreeMap<String, String> {
    let cell = ExecCell {
        argv: vec!["/usr/bin/env".into()],
        ..cell
    };
    let out = backend.run_cell(sandbox, &Cell::Exec(cell)).expect("run");
    let CellOutput::Exec {
        exit_code, stdout, ..
    } = out
    else {
        panic!("not an exec output")
    };
    assert_eq!(exit_code, Some(0));
    String::from_utf8(stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn keys(env: &BTreeMap<String, String>) -> BTreeSet<&str> {
    env.keys().map(String::as_str).collect()
}

// contract: GIT-013
#[test]
fn exec_cells_see_only_the_safe_keys_plus_their_allow_list() {
    let repo = TestRepo::new("work");
    let backend = backend(&repo, host_env());
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");

    let env = child_env(&backend, &sandbox, ExecCell::default());
    assert_eq!(
        keys(&env),
        BTreeSet::from(["PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV"])
    );
    assert_eq!(env["HOME"], "/home/agent");
    assert!(!env.values().any(|v| v.contains(CREDENTIAL)));

    let allowed = ExecCell {
        allow_host_env: vec!["LANG".into(), "NOT_SET_ON_HOST".into()],
        ..ExecCell::default()
    };
    let env = child_env(&backend, &sandbox, allowed);
    assert_eq!(
        keys(&env),
        BTreeSet::from(["PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV", "LANG"])
    );
}

// contract: GIT-013
#[test]
fn the_real_process_environment_is_never_inherited() {
    let repo = TestRepo::new("work");
    // Every variable of this test process's environment (the test runner
    // sets CARGO_* ones) other than the four safe keys.
    let safe = ["PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV"];
    let host_only: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .filter(|k| !safe.contains(&k.as_str()))
        .collect();
    let backend = backend(&repo, HostEnv::from_process());
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");
    let env = child_env(&backend, &sandbox, ExecCell::default());
    let allowed = BTreeSet::from(["PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV"]);
    assert!(keys(&env).is_subset(&allowed), "{:?}", keys(&env));
    assert!(env.contains_key("PATH"));
    for key in &host_only {
        assert!(!env.contains_key(key), "{key} leaked into the cell");
    }
}

// contract: GIT-013
#[test]
fn safe_keys_missing_on_the_host_are_missing_in_the_child() {
    let repo = TestRepo::new("work");
    let backend = backend(&repo, HostEnv::from_pairs([("SOMETHING", "else")]));
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");
    let env = child_env(&backend, &sandbox, ExecCell::default());
    assert!(env.is_empty(), "{env:?}");
}

// contract: GIT-011
#[test]
fn exec_cells_get_a_secret_only_when_it_is_injected_explicitly() {
    let repo = TestRepo::new("work");
    let backend = backend(&repo, host_env());
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");

    let plain = child_env(&backend, &sandbox, ExecCell::default());
    assert!(!plain.contains_key("GITHUB_TOKEN"));

    let injected = ExecCell {
        env: BTreeMap::from([(
            "GITHUB_TOKEN".to_owned(),
            SecretValue::new("ghs_cell_scoped"),
        )]),
        ..ExecCell::default()
    };
    assert!(
        !format!("{injected:?}").contains("ghs_cell_scoped"),
        "Debug must redact"
    );
    let env = child_env(&backend, &sandbox, injected);
    assert_eq!(
        env.get("GITHUB_TOKEN").map(String::as_str),
        Some("ghs_cell_scoped")
    );
    assert!(!env.values().any(|v| v.contains(CREDENTIAL)));
}

#[test]
fn exec_cells_run_in_the_worktree_and_report_exit_codes() {
    let repo = TestRepo::new("work");
    let backend = backend(&repo, host_env());
    let sandbox = backend
        .provision(&ProvisionRequest {
            id: Some("cwd".into()),
        })
        .expect("provision");
    assert_eq!(sandbox.id, "cwd");
    let out = backend
        .run_cell(
            &sandbox,
            &Cell::exec(["sh", "-c", "pwd -P; echo oops >&2; exit 3"]),
        )
        .expect("run");
    let CellOutput::Exec {
        exit_code,
        stdout,
        stderr,
    } = out
    else {
        panic!("exec output")
    };
    assert_eq!(exit_code, Some(3));
    assert_eq!(
        PathBuf::from(String::from_utf8_lossy(&stdout).trim()),
        sandbox.workdir
    );
    assert_eq!(stderr, b"oops\n");

    let err = backend
        .run_cell(&sandbox, &Cell::exec(Vec::<String>::new()))
        .expect_err("empty argv");
    assert!(matches!(err, Error::CellRefused { .. }), "{err}");
    let err = backend
        .run_cell(&sandbox, &Cell::exec(["/no/such/program"]))
        .expect_err("missing program");
    assert!(matches!(err, Error::CellSpawn { .. }), "{err}");
}

/// A host-side provider holding a credential of its own.
struct HostProvider {
    api_key: String,
    calls: Mutex<Vec<(u32, String, PathBuf)>>,
}

impl PromptProvider for HostProvider {
    fn complete(
        &self,
        prompt: &str,
        sandbox: &ProvisionedSandbox,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        assert!(!self.api_key.is_empty(), "authenticated host-side");
        self.calls.lock().expect("lock").push((
            std::process::id(),
            prompt.to_owned(),
            sandbox.workdir.clone(),
        ));
        Ok(format!("answer to {prompt}"))
    }
}

// contract: GIT-010
#[test]
fn prompt_cells_run_host_side_and_nothing_enters_the_box() {
    let repo = TestRepo::new("work");
    let provider = Arc::new(HostProvider {
        api_key: CREDENTIAL.into(),
        calls: Mutex::new(Vec::new()),
    });
    let backend = backend(&repo, host_env()).with_prompt_provider(provider.clone());
    assert!(backend.capabilities().prompt_cells);
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");

    let out = backend
        .run_cell(&sandbox, &Cell::prompt("plan the change"))
        .expect("run");
    assert_eq!(
        out,
        CellOutput::Prompt {
            text: "answer to plan the change".into()
        }
    );
    // It ran in this (host) process, with the host's credential...
    let calls = provider.calls.lock().expect("lock");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, std::process::id());
    // ...and left nothing in the box: no file was written there.
    assert!(
        list_untracked_files(&sandbox.workdir)
            .expect("list")
            .is_empty()
    );
    let status = crate::support::git(&sandbox.workdir, &["status", "--porcelain", "--ignored"]);
    assert!(status.stdout.is_empty());
}

// contract: GIT-010
#[test]
fn a_backend_without_a_prompt_provider_refuses_prompt_cells() {
    let repo = TestRepo::new("work");
    let backend = backend(&repo, host_env());
    assert!(!backend.capabilities().prompt_cells);
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");
    let cell = Cell::prompt("hi");
    assert!(matches!(
        admit_cell(&backend, &cell, &CellPolicy::default()),
        Err(Error::CellRefused { .. })
    ));
    assert!(matches!(
        backend.run_cell(&sandbox, &cell),
        Err(Error::CellRefused { .. })
    ));
}

/// A backend of unknown kind, in memory, with chosen capabilities.
struct MysteryBackend {
    caps: Capabilities,
    ran: Mutex<Vec<Cell>>,
}

impl SandboxBackend for MysteryBackend {
    fn provision(&self, request: &ProvisionRequest) -> Result<ProvisionedSandbox, Error> {
        Ok(ProvisionedSandbox {
            id: request.id.clone().unwrap_or_else(|| "mystery-1".into()),
            workdir: PathBuf::from("/box"),
            session: None,
        })
    }

    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn run_cell(&self, _sandbox: &ProvisionedSandbox, cell: &Cell) -> Result<CellOutput, Error> {
        self.ran.lock().expect("lock").push(cell.clone());
        Ok(CellOutput::Exec {
            exit_code: Some(0),
            stdout: Vec::new(),
            stderr: Vec::new(),
        })
    }
}

/// Caller code generic over the seam: it may look at capabilities and call
/// the one `run_cell` signature, nothing else.
fn caller<B: SandboxBackend + ?Sized>(
    backend: &B,
    cells: &[Cell],
    policy: &CellPolicy,
) -> Vec<Result<(), String>> {
    let sandbox = backend
        .provision(&ProvisionRequest::default())
        .expect("provision");
    cells
        .iter()
        .map(|cell| {
            admit_cell(backend, cell, policy).map_err(|e| e.to_string())?;
            backend
                .run_cell(&sandbox, cell)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn cells() -> Vec<Cell> {
    let secret = ExecCell {
        argv: vec!["true".into()],
        env: BTreeMap::from([("TOKEN".to_owned(), SecretValue::new("t"))]),
        ..ExecCell::default()
    };
    vec![Cell::exec(["true"]), Cell::Exec(secret)]
}

fn policies() -> Vec<CellPolicy> {
    vec![
        CellPolicy::default(),
        CellPolicy {
            exec_requires_network_isolation: true,
            ..CellPolicy::default()
        },
        CellPolicy {
            exec_requires_filesystem_isolation: true,
            ..CellPolicy::default()
        },
    ]
}

// contract: GIT-009, GIT-012
#[test]
fn callers_decide_from_capabilities_only() {
    let repo = TestRepo::new("work");
    let local = backend(&repo, host_env());
    let twin = MysteryBackend {
        caps: local.capabilities(),
        ran: Mutex::new(Vec::new()),
    };
    for policy in policies() {
        // Same capabilities, unknown kind: identical decisions through the
        // same run_cell signature.
        assert_eq!(
            caller(&local, &cells(), &policy),
            caller(&twin, &cells(), &policy),
            "{policy:?}"
        );
    }
    // The local backend is no isolation: a policy that needs it refuses.
    let strict = CellPolicy {
        exec_requires_network_isolation: true,
        ..CellPolicy::default()
    };
    assert!(caller(&local, &cells(), &strict).iter().all(Result::is_err));

    // Different capabilities change the answer, whatever the backend is.
    let isolated = MysteryBackend {
        caps: Capabilities {
            network_isolated: true,
            filesystem_isolated: true,
            ..local.capabilities()
        },
        ran: Mutex::new(Vec::new()),
    };
    assert!(
        caller(&isolated, &cells(), &strict)
            .iter()
            .all(Result::is_ok)
    );
    let no_secrets = MysteryBackend {
        caps: Capabilities {
            secret_injection: false,
            ..local.capabilities()
        },
        ran: Mutex::new(Vec::new()),
    };
    let results = caller(&no_secrets, &cells(), &CellPolicy::default());
    assert!(results[0].is_ok() && results[1].is_err(), "{results:?}");
    assert_eq!(
        no_secrets.ran.lock().expect("lock").len(),
        1,
        "refused cells never reach run_cell"
    );
    // Through a trait object too.
    let dynamic: &dyn SandboxBackend = &twin;
    assert_eq!(
        caller(dynamic, &cells(), &CellPolicy::default()),
        caller(&local, &cells(), &CellPolicy::default())
    );
}

#[test]
fn host_env_and_secret_debug_show_no_values() {
    let env = host_env();
    let shown = format!("{env:?}");
    assert!(shown.contains("ANTHROPIC_API_KEY"));
    assert!(!shown.contains(CREDENTIAL));
    assert_eq!(
        format!("{:?}", SecretValue::new(CREDENTIAL)),
        "SecretValue(<redacted>)"
    );
}
