//! How a fire becomes a run: the [`Launcher`] seam and its real
//! implementation over the runner library.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use lifecycle_core::{Actor, Cancellation, SessionRecorder};
use providers_scripted::ScriptModel;
use runner::{LegProgram, ProviderChoice, RunConfig};
use state_sqlite::Store;
use tokio::sync::watch;

use crate::model::{Micros, RunRequest};

/// One fire to run.
#[derive(Debug, Clone)]
pub struct Fire {
    /// The schedule_run row.
    pub run_id: String,
    /// The schedule.
    pub schedule_id: String,
    /// The schedule's name.
    pub schedule_name: String,
    /// The session the run records.
    pub session_id: String,
    /// What to run.
    pub request: RunRequest,
    /// The instant it was due.
    pub due_at: Micros,
}

/// How a run ended, for its schedule_run row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// `completed`, `failed`, `timed_out` or `cancelled`.
    pub status: String,
    /// A `run.*` reason code.
    pub reason: String,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// Runs one fire to its end. `shutdown` turns `Some(cause)` when the
/// scheduler shuts down (SIGINT, SIGTERM, ...): the run must then end,
/// cancelled for that cause, promptly.
pub trait Launcher: Send + Sync + 'static {
    /// Runs `fire`.
    fn run(
        &self,
        fire: Fire,
        shutdown: watch::Receiver<Option<Cancellation>>,
    ) -> impl Future<Output = RunOutcome> + Send;
}

/// The real launcher: `runner::run` recording on `R` (the SQLite store by
/// default, or the PostgreSQL one), the scripted provider replayed by
/// `leg`.
#[derive(Debug)]
pub struct RunnerLauncher<R = Store> {
    store: Arc<R>,
    leg: LegProgram,
    actor: Actor,
}

impl<R> RunnerLauncher<R> {
    /// Runs on `store`; scripted legs run `leg`; sessions are recorded by
    /// `actor`.
    pub fn new(store: Arc<R>, leg: LegProgram, actor: Actor) -> Self {
        Self { store, leg, actor }
    }

    fn config(&self, fire: &Fire) -> Result<RunConfig, String> {
        let r = &fire.request;
        let provider = match r.provider.as_str() {
            "scripted" => {
                let text = r.script.as_deref().unwrap_or(DEFAULT_SCRIPT);
                let script = ScriptModel::from_json(text).map_err(|e| format!("script: {e}"))?;
                ProviderChoice::Scripted {
                    script,
                    leg: self.leg.clone(),
                }
            }
            "claude" => ProviderChoice::Claude,
            "codex" => ProviderChoice::Codex,
            "gemini" => ProviderChoice::Gemini,
            "pi" => ProviderChoice::Pi,
            other => return Err(format!("unknown provider {other:?}")),
        };
        let mut config = RunConfig::new(
            fire.session_id.clone(),
            provider,
            r.prompt.clone(),
            PathBuf::from(&r.workspace),
        );
        config.model = r.model.clone();
        config.sandbox = r.sandbox;
        config.actor = self.actor.clone();
        Ok(config)
    }
}

/// The script of a scripted schedule that names none.
pub const DEFAULT_SCRIPT: &str = r#"[{"type": "text", "text": "scheduled run done"}]"#;

impl<R: SessionRecorder + Send + Sync + 'static> Launcher for RunnerLauncher<R> {
    async fn run(
        &self,
        fire: Fire,
        mut shutdown: watch::Receiver<Option<Cancellation>>,
    ) -> RunOutcome {
        let config = match self.config(&fire) {
            Ok(c) => c,
            Err(e) => {
                return RunOutcome {
                    status: "failed".into(),
                    reason: "run.failed.exception".into(),
                    error: Some(e),
                };
            }
        };
        let cancel = async move {
            // A closed channel (the scheduler dropped) also cancels, as
            // SIGTERM does.
            match shutdown.wait_for(Option::is_some).await {
                Ok(cause) => cause.unwrap_or(Cancellation::Sigterm),
                Err(_) => Cancellation::Sigterm,
            }
        };
        match runner::run(Arc::clone(&self.store), config, cancel).await {
            Ok(report) => {
                let status = match report.recorded_status.as_str() {
                    "completed" | "completed_empty" => "completed",
                    "cancelled" => "cancelled",
                    "timed_out" => "timed_out",
                    _ => "failed",
                };
                RunOutcome {
                    status: status.into(),
                    reason: report.verdict.reason_code.to_string(),
                    error: report.error.clone(),
                }
            }
            Err(e) => RunOutcome {
                status: "failed".into(),
                reason: "run.failed.exception".into(),
                error: Some(e.to_string()),
            },
        }
    }
}
