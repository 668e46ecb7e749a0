//! Registered reason codes, grouped by class, and their validation.
//!
//! The union of every class ([`VALID_REASON_CODES`]) is the only bound on a
//! reason: a writer may stamp any registered code whose first dotted segment
//! is one of the policy's prefixes. There is deliberately no closed "skip
//! reasons" list: skipped schedule runs carry capacity deferrals, budget
//! exhaustion and admission decisions' own codes too.

use crate::error::CoreError;
use crate::model::Reason;
use crate::policy::Policy;

macro_rules! reason_class {
    ($(#[$meta:meta])* $name:ident { $($(#[$cmeta:meta])* $konst:ident = $code:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            $($(#[$cmeta])* pub const $konst: &'static str = $code;)*
            /// Every code of this class.
            pub const ALL: &'static [&'static str] = &[$($code),*];
        }
    };
}

reason_class!(
    /// Run outcomes (sessions, invocations, schedule runs).
    RunReasons {
        /// The run started.
        STARTED_OK = "run.started.ok",
        /// The run completed cleanly.
        COMPLETED_OK = "run.completed.ok",
        /// The process exited nonzero.
        FAILED_EXIT_NONZERO = "run.failed.exit_nonzero",
        /// An exception ended the run.
        FAILED_EXCEPTION = "run.failed.exception",
        /// A retryable provider error ended the run.
        FAILED_PROVIDER_RETRYABLE = "run.failed.provider_retryable",
        /// A non-retryable provider error ended the run.
        FAILED_PROVIDER_NONRETRYABLE = "run.failed.provider_nonretryable",
        /// An expected artifact was missing.
        FAILED_MISSING_ARTIFACT = "run.failed.missing_artifact",
        /// The run refused to inherit the orchestrator's cwd.
        FAILED_CWD_INHERIT_REFUSED = "run.failed.cwd_inherit_refused",
        /// The run was escalated.
        FAILED_ESCALATED = "run.failed.escalated",
        /// The run ended with nothing to show for it.
        COMPLETED_EMPTY_NO_EVIDENCE = "run.completed_empty.no_evidence",
        /// Completed, but finalisation failed.
        COMPLETED_FINALIZE_ERROR = "run.completed.finalize_error",
        /// Completed, but a gate rejected the result.
        COMPLETED_GATE_REJECTED = "run.completed.gate_rejected",
        /// The planned DAG completed but reactive spawns were refused after
        /// spawn capacity ran out: completed, not clean.
        COMPLETED_SPAWN_REFUSED = "run.completed.spawn_refused",
        /// Writing an artifact failed.
        FAILED_ARTIFACT_WRITE = "run.failed.artifact_write",
        /// The deadline passed.
        TIMED_OUT_DEADLINE = "run.timed_out.deadline",
        /// The user aborted.
        ABORTED_USER = "run.aborted.user",
        /// SIGINT.
        CANCELLED_SIGINT = "run.cancelled.sigint",
        /// SIGTERM.
        CANCELLED_SIGTERM = "run.cancelled.sigterm",
        /// The system cancelled.
        CANCELLED_SYSTEM = "run.cancelled.system",
        /// The orchestrator cancelled.
        CANCELLED_ORCHESTRATOR = "run.cancelled.orchestrator",
        /// Killed by hand.
        CANCELLED_MANUAL_KILL = "run.cancelled.manual_kill",
        /// Force-killed.
        CANCELLED_FORCE_KILL = "run.cancelled.force_kill",
        /// Cancelled automatically as stale.
        CANCELLED_STALE_AUTO = "run.cancelled.stale_auto",
        /// Paused by an operator.
        PAUSED_OPERATOR = "run.paused.operator",
        /// A lease expired; the run was requeued.
        QUEUED_LEASE_EXPIRED = "run.queued.lease_expired",
        /// Lease attempts ran out.
        FAILED_LEASE_ATTEMPTS_EXHAUSTED = "run.failed.lease_attempts_exhausted",
        /// The run was never dispatched.
        FAILED_NEVER_DISPATCHED = "run.failed.never_dispatched",
        /// Skipped: the waiter cap was exceeded (task-admission fallback).
        SKIPPED_WAITER_CAP_EXCEEDED = "run.skipped.waiter_cap_exceeded",
        /// Skipped: the run cannot finish within a lease.
        SKIPPED_DURATION_EXCEEDS_LEASE = "run.skipped.duration_exceeds_lease",
    }
);

reason_class!(
    /// Session health findings.
    SessionReasons {
        /// No heartbeat.
        STALE_NO_HEARTBEAT = "session.stale.no_heartbeat",
        /// No process.
        ORPHANED_NO_PROCESS = "session.orphaned.no_process",
        /// Terminal, but stale locks left behind.
        ZOMBIE_STALE_LOCKS = "session.zombie.stale_locks",
        /// The process is dead.
        PHANTOM_PROCESS_DEAD = "session.phantom.process_dead",
        /// Artifacts are missing.
        PHANTOM_MISSING_ARTIFACTS = "session.phantom.missing_artifacts",
        /// Reopened by a resume.
        REOPENED_BY_RESUME = "session.reopened.by_resume",
    }
);

reason_class!(
    /// Play outcomes.
    PlayReasons {
        /// Created.
        PENDING_CREATED = "play.pending.created",
        /// Waiting on dependencies.
        PENDING_WAITING_ON_DEPS = "play.pending.waiting_on_deps",
        /// Ready.
        PENDING_READY = "play.pending.ready",
        /// Invalid dependencies.
        BLOCKED_INVALID_DEPS = "play.blocked.invalid_deps",
        /// A dependency failed.
        BLOCKED_DEP_FAILED = "play.blocked.dep_failed",
        /// The gate's verdict failed.
        GATE_FAILED_VERDICT = "play.gate_failed.verdict",
        /// The gate failed twice.
        ESCALATED_GATE_TWICE = "play.escalated.gate_twice",
        /// Merged.
        MERGED_OK = "play.merged.ok",
    }
);

reason_class!(
    /// Show outcomes.
    ShowReasons {
        /// Created.
        ACTIVE_CREATED = "show.active.created",
        /// No play is ready.
        BLOCKED_NO_READY_PLAYS = "show.blocked.no_ready_plays",
        /// The final gate passed.
        COMPLETED_FINAL_GATE = "show.completed.final_gate",
        /// An operator aborted.
        ABORTED_OPERATOR = "show.aborted.operator",
        /// Every play merged.
        COMPLETED_ALL_PLAYS_MERGED = "show.completed.all_plays_merged",
    }
);

reason_class!(
    /// Scheduler outcomes on schedule runs.
    ScheduleReasons {
        /// Queued.
        QUEUED_CREATED = "schedule.queued.created",
        /// Fired when due.
        FIRED_DUE = "schedule.fired.due",
        /// The default for a skip with no explicit code: "skipped, and the
        /// writer gave no reason". No code path evaluates a precondition.
        SKIPPED_PRECONDITION = "schedule.skipped.precondition",
        /// A fire arrived while the previous run was still going.
        SKIPPED_OVERLAP = "schedule.skipped.overlap",
        /// A fire's due instant passed while the scheduler was down.
        SKIPPED_MISSED_FIRE = "schedule.skipped.missed_fire",
        /// Deferred for capacity (sampled rows; lands on skipped rows).
        DEFERRED_CAPACITY = "schedule.deferred.capacity",
        /// The budget is exhausted (lands on skipped rows).
        BUDGET_EXHAUSTED = "schedule.budget.exhausted",
    }
);

reason_class!(
    /// Schedule definition changes.
    ScheduleDefinitionReasons {
        /// Observed created.
        CREATED_OBSERVED = "schedule_definition.created.observed",
        /// Observed enabled.
        ENABLED_OBSERVED = "schedule_definition.enabled.observed",
        /// Observed deleted.
        DELETED_OBSERVED = "schedule_definition.deleted.observed",
        /// Disabled for an unspecified reason.
        DISABLED_UNSPECIFIED = "schedule_definition.disabled.unspecified",
        /// Disabled: max runs reached.
        DISABLED_MAX_RUNS = "schedule_definition.disabled.max_runs",
        /// Disabled: budget exhausted.
        DISABLED_BUDGET_EXHAUSTED = "schedule_definition.disabled.budget_exhausted",
        /// Disabled as declared.
        DISABLED_DECLARED = "schedule_definition.disabled.declared",
        /// Disabled: omitted from the declaration.
        DISABLED_OMITTED = "schedule_definition.disabled.omitted",
        /// Disabled by hand.
        DISABLED_MANUAL = "schedule_definition.disabled.manual",
    }
);

reason_class!(
    /// Team changes.
    TeamReasons {
        /// Archived by an operator.
        ARCHIVED_OPERATOR = "team.archived.operator",
    }
);

reason_class!(
    /// Outbox dispatch changes.
    DispatchReasons {
        /// Enqueued.
        PENDING_ENQUEUED = "dispatch.pending.enqueued",
        /// A delivery attempt started.
        DELIVERING_ATTEMPT = "dispatch.delivering.attempt",
        /// The transport accepted it.
        DELIVERED_TRANSPORT_OK = "dispatch.delivered.transport_ok",
        /// Back to pending after a failure.
        PENDING_RETRY_BACKOFF = "dispatch.pending.retry_backoff",
        /// Attempts exhausted.
        DEAD_LETTER_MAX_ATTEMPTS = "dispatch.dead_letter.max_attempts",
        /// No ack in time.
        DEAD_LETTER_ACK_TIMEOUT = "dispatch.dead_letter.ack_timeout",
        /// The deadline passed.
        EXPIRED_DEADLINE = "dispatch.expired.deadline",
        /// The consumer acknowledged.
        ACKED_CONSUMER = "dispatch.acked.consumer",
    }
);

/// Every reason class's codes, in class order.
pub const REASON_CLASSES: &[&[&str]] = &[
    RunReasons::ALL,
    SessionReasons::ALL,
    PlayReasons::ALL,
    ShowReasons::ALL,
    ScheduleReasons::ALL,
    ScheduleDefinitionReasons::ALL,
    TeamReasons::ALL,
    DispatchReasons::ALL,
];

/// Whether `code` is a registered reason code (the union of every class).
pub fn is_valid_reason_code(code: &str) -> bool {
    REASON_CLASSES.iter().any(|class| class.contains(&code))
}

/// Every registered code (the union of every class), in class order.
pub fn valid_reason_codes() -> impl Iterator<Item = &'static str> {
    REASON_CLASSES
        .iter()
        .flat_map(|class| class.iter().copied())
}

/// Checks a reason against a policy: registered code, allowed prefix.
pub fn validate_reason(policy: &Policy, reason: &Reason) -> Result<(), CoreError> {
    if !is_valid_reason_code(&reason.code) {
        return Err(CoreError::UnknownReasonCode(reason.code.clone()));
    }
    let prefix = reason.code.split('.').next().unwrap_or_default();
    if !policy.allows_reason_prefix(prefix) {
        return Err(CoreError::ReasonNotAllowed {
            code: reason.code.clone(),
            entity_type: policy.entity_type().to_owned(),
        });
    }
    Ok(())
}

/// The status and reason of a run whose planned work finished.
///
/// A run that had reactive spawn requests refused after it ran out of spawn
/// capacity still completed, but not cleanly: it gets
/// [`RunReasons::COMPLETED_SPAWN_REFUSED`] with one `refused_spawn:<id>`
/// evidence reference per refusal.
pub fn completion_reason(refused_spawns: &[String]) -> Reason {
    if refused_spawns.is_empty() {
        return Reason::new(RunReasons::COMPLETED_OK);
    }
    let mut reason = Reason::new(RunReasons::COMPLETED_SPAWN_REFUSED).with_summary(format!(
        "{} spawn request(s) refused after spawn capacity ran out",
        refused_spawns.len()
    ));
    reason.evidence_refs = refused_spawns
        .iter()
        .map(|id| format!("refused_spawn:{id}"))
        .collect();
    reason
}

/// Whether a completion reason is the clean one.
pub fn is_clean_completion(code: &str) -> bool {
    code == RunReasons::COMPLETED_OK
}

/// The reason an invocation carries when its child sessions roll up: a
/// non-clean completion of any child (spawn refused first) is kept rather
/// than replaced by the clean code.
pub fn rollup_completion_reason<'a>(
    child_codes: impl IntoIterator<Item = &'a str>,
) -> &'static str {
    let mut worst = RunReasons::COMPLETED_OK;
    for code in child_codes {
        if code == RunReasons::COMPLETED_SPAWN_REFUSED {
            return RunReasons::COMPLETED_SPAWN_REFUSED;
        }
        if let Some(known) = RunReasons::ALL.iter().find(|c| **c == code)
            && known.starts_with("run.completed.")
            && !is_clean_completion(known)
        {
            worst = known;
        }
    }
    worst
}

/// The reason for a schedule run skipped by task admission: the decision's
/// own code, or [`RunReasons::SKIPPED_WAITER_CAP_EXCEEDED`] when it has none.
/// An unregistered decision code is an error, never silently replaced.
pub fn admission_skip_reason(decision_code: Option<&str>) -> Result<&str, CoreError> {
    match decision_code {
        None => Ok(RunReasons::SKIPPED_WAITER_CAP_EXCEEDED),
        Some(code) if is_valid_reason_code(code) => Ok(code),
        Some(code) => Err(CoreError::UnknownReasonCode(code.to_owned())),
    }
}

/// The reason for a schedule run moved to skipped: the given code, or the
/// [`ScheduleReasons::SKIPPED_PRECONDITION`] fallback when none was given.
pub fn skip_reason(code: Option<&str>) -> &str {
    code.unwrap_or(ScheduleReasons::SKIPPED_PRECONDITION)
}

/// Samples capacity-deferral rows: every deferral is counted, only the first
/// of a saturation stretch and then one every `every` deferrals are recorded.
#[derive(Debug, Clone)]
pub struct DeferralSampler {
    every: u64,
    count: u64,
}

impl DeferralSampler {
    /// A sampler recording one row per `every` deferrals (at least 1).
    pub fn new(every: u64) -> Self {
        DeferralSampler {
            every: every.max(1),
            count: 0,
        }
    }

    /// Counts one deferral that happened at `at`; returns the timestamp to
    /// stamp on a row when this deferral is sampled (its own time, never the
    /// stretch's first), or `None` when it is only counted.
    pub fn record(&mut self, at: i64) -> Option<i64> {
        let sampled = self.count.is_multiple_of(self.every);
        self.count += 1;
        sampled.then_some(at)
    }

    /// Deferrals counted in the current stretch.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Ends a saturation stretch (capacity came back).
    pub fn reset(&mut self) {
        self.count = 0;
    }
}
