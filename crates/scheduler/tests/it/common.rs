//! Shared fixtures: a state file, schedules and a runner launcher whose
//! scripted leg waits for a gate file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lifecycle_core::{Actor, ActorType};
use runner::LegProgram;
use scheduler::{RunRequest, RunnerLauncher, ScheduleSpec, Schedules, Trigger};
use state_sqlite::{Engine, EngineConfig, Store};

pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) engine: Engine,
}

impl Env {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine =
            Engine::create(dir.path().join("state.db"), EngineConfig::default()).expect("db");
        Self { dir, engine }
    }

    pub(crate) fn schedules(&self) -> Arc<Schedules> {
        Arc::new(Schedules::new(
            Store::new(self.engine.clone()),
            Actor::new(ActorType::Operator, "test"),
        ))
    }

    pub(crate) fn gate(&self) -> PathBuf {
        self.dir.path().join("gate")
    }

    /// A launcher whose leg waits until the gate file exists, then replays
    /// the script.
    pub(crate) fn launcher(&self) -> Arc<RunnerLauncher> {
        gated_launcher(Store::new(self.engine.clone()), &self.gate())
    }

    pub(crate) fn open_gate(&self) {
        std::fs::write(self.gate(), b"").expect("gate");
    }

    pub(crate) fn conn(&self) -> state_sqlite::Conn {
        self.engine.conn().expect("conn")
    }
}

/// A launcher recording on `store` whose leg waits until `gate` exists,
/// then replays the script.
pub(crate) fn gated_launcher<R>(store: R, gate: &Path) -> Arc<RunnerLauncher<R>> {
    Arc::new(RunnerLauncher::new(
        Arc::new(store),
        LegProgram {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                format!(
                    "while [ ! -e '{}' ]; do sleep 0.02; done; cat \"$2\"",
                    gate.display()
                ),
                "leg".into(),
            ],
        },
        Actor::new(ActorType::Executor, "sched-test"),
    ))
}

pub(crate) fn interval(name: &str, seconds: u64, workspace: &Path) -> ScheduleSpec {
    serde_json::from_value(serde_json::json!({
        "name": name,
        "trigger": {"interval": {"seconds": seconds}},
        "run": {"prompt": "scheduled", "workspace": workspace},
    }))
    .expect("spec")
}

pub(crate) fn request(workspace: &Path) -> RunRequest {
    RunRequest {
        provider: "scripted".into(),
        prompt: "p".into(),
        workspace: workspace.display().to_string(),
        sandbox: false,
        model: None,
        script: None,
    }
}

pub(crate) fn cron(name: &str, expr: &str, tz: &str, workspace: &Path) -> ScheduleSpec {
    ScheduleSpec {
        name: name.into(),
        trigger: Trigger::Cron {
            expr: expr.into(),
            tz: tz.into(),
        },
        run: request(workspace),
        missed_fire: Default::default(),
        max_concurrent: 1,
        enabled: true,
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// (status, reason) of every run of a schedule, oldest first.
pub(crate) fn runs(env: &Env, schedule_id: &str) -> Vec<(String, String)> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT status, status_reason_code FROM schedule_runs WHERE schedule_id = ?1 ORDER BY created_at, id",
        )
        .expect("prepare");
    stmt.query_map([schedule_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}
