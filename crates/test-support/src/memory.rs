//! An in-memory lifecycle store over `decide()`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lifecycle_core::{
    CoreError, Decision, InitialCommand, LifecycleStore, Outcome, OutcomeKind, PolicyRegistry,
    RowSnapshot, SessionSnapshot, TransitionCommand, TransitionRecord, decide, decide_initial,
    default_registry,
};
use serde_json::Value;

/// What the in-memory store can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryStoreError {
    /// A lifecycle rule was broken.
    #[error(transparent)]
    Rule(#[from] CoreError),
    /// A previous holder of the lock panicked.
    #[error("memory store lock poisoned")]
    Poisoned,
    /// `update_session` was given a column outside the allowlist.
    #[error("session column {column:?} may not be written")]
    ColumnNotAllowed {
        /// The refused column.
        column: String,
    },
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) rows: BTreeMap<(String, String), RowSnapshot>,
    /// The reason code of each row's current status.
    reasons: BTreeMap<(String, String), String>,
    /// Creation order of each row.
    pub(crate) created: BTreeMap<(String, String), i64>,
    /// Messages by id: (session id, created_at).
    pub(crate) messages: BTreeMap<String, (String, i64)>,
    history: Vec<TransitionRecord>,
    rejections: usize,
    clock: i64,
}

/// An in-memory [`LifecycleStore`] with the default policies. Each call holds
/// one lock for its whole read-decide-write, the in-memory analogue of a
/// `BEGIN IMMEDIATE` transaction.
#[derive(Debug)]
pub struct MemoryStore {
    registry: PolicyRegistry,
    state: Mutex<State>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            registry: default_registry().clone(),
            state: Mutex::new(State::default()),
        }
    }
}

impl MemoryStore {
    /// The policy registry.
    pub fn registry(&self) -> &PolicyRegistry {
        &self.registry
    }

    /// Runs `f` under the store's lock (one "transaction").
    pub(crate) fn with_state<T>(
        &self,
        f: impl FnOnce(&mut State) -> Result<T, MemoryStoreError>,
    ) -> Result<T, MemoryStoreError> {
        let mut state = self.state.lock().map_err(|_| MemoryStoreError::Poisoned)?;
        f(&mut state)
    }

    /// How many rejection audit entries were recorded.
    pub fn rejections(&self) -> Result<usize, MemoryStoreError> {
        Ok(self
            .state
            .lock()
            .map_err(|_| MemoryStoreError::Poisoned)?
            .rejections)
    }
}

fn apply(
    state: &mut State,
    key: (String, String),
    from: Option<String>,
    plan: &lifecycle_core::WritePlan,
    reason: &lifecycle_core::Reason,
    actor: &lifecycle_core::Actor,
) -> Outcome {
    state.clock += 1;
    let version = state.clock;
    state.created.entry(key.clone()).or_insert(version);
    state.reasons.insert(key.clone(), reason.code.clone());
    let row = state
        .rows
        .entry(key.clone())
        .or_insert_with(|| RowSnapshot {
            status: plan.to_status.clone(),
            version,
            columns: BTreeMap::new(),
        });
    row.status = plan.to_status.clone();
    row.version = version;
    for (c, v) in &plan.patch {
        row.columns.insert(c.clone(), v.clone());
    }
    let id = i64::try_from(state.history.len()).unwrap_or(i64::MAX - 1) + 1;
    state.history.push(TransitionRecord {
        id,
        entity_type: key.0,
        entity_id: key.1,
        from_status: from.clone(),
        to_status: plan.to_status.clone(),
        reason_code: reason.code.clone(),
        reason_summary: reason.summary.clone(),
        actor_type: actor.kind.as_str().to_owned(),
        actor_id: actor.id.clone(),
        overridden: plan.override_used.is_some(),
        created_at: version,
    });
    Outcome {
        result: OutcomeKind::Applied,
        previous_status: from,
        current_status: Some(plan.to_status.clone()),
        transition_id: Some(id),
    }
}

impl State {
    /// Executes a decision about `key` (whose row was `row`).
    pub(crate) fn execute(
        &mut self,
        key: (String, String),
        row: Option<&RowSnapshot>,
        decision: Decision,
        cmd: &TransitionCommand,
    ) -> Outcome {
        let previous = row.map(|r| r.status.clone());
        let unchanged = |result| Outcome {
            result,
            previous_status: previous.clone(),
            current_status: previous.clone(),
            transition_id: None,
        };
        match decision {
            Decision::Write(plan) => {
                apply(self, key, previous.clone(), &plan, &cmd.reason, &cmd.actor)
            }
            Decision::Noop { .. } => unchanged(OutcomeKind::Applied),
            Decision::Conflict { .. } => unchanged(OutcomeKind::Conflict),
            Decision::Reject { .. } => {
                self.rejections += 1;
                unchanged(OutcomeKind::Rejected)
            }
        }
    }

    /// A plain SET of columns (null clears), bumping the version.
    pub(crate) fn set_columns(
        &mut self,
        key: &(String, String),
        columns: &BTreeMap<String, Value>,
    ) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(row) = self.rows.get_mut(key) {
            row.version = row.version.max(clock);
            for (c, v) in columns {
                if v.is_null() {
                    row.columns.remove(c);
                } else {
                    row.columns.insert(c.clone(), v.clone());
                }
            }
        }
    }

    /// A session snapshot of `key`'s row.
    pub(crate) fn snapshot(&self, key: &(String, String)) -> Option<SessionSnapshot> {
        let row = self.rows.get(key)?;
        let messages = self.messages.values().filter(|(s, _)| *s == key.1).count();
        Some(SessionSnapshot {
            id: key.1.clone(),
            status: row.status.clone(),
            version: row.version,
            reason_code: self.reasons.get(key).cloned(),
            columns: row.columns.clone(),
            messages: u64::try_from(messages).unwrap_or(u64::MAX),
        })
    }
}

impl LifecycleStore for MemoryStore {
    type Error = MemoryStoreError;

    fn create(&self, cmd: &InitialCommand) -> Result<Outcome, MemoryStoreError> {
        let policy = self.registry.get(&cmd.entity_type)?;
        let mut state = self.state.lock().map_err(|_| MemoryStoreError::Poisoned)?;
        let key = (cmd.entity_type.clone(), cmd.entity_id.clone());
        let row = state.rows.get(&key).cloned();
        match decide_initial(policy, row.as_ref(), cmd)? {
            Decision::Write(plan) => {
                Ok(apply(&mut state, key, None, &plan, &cmd.reason, &cmd.actor))
            }
            other => Ok(Outcome {
                result: OutcomeKind::Conflict,
                previous_status: row.as_ref().map(|r| r.status.clone()),
                current_status: match other {
                    Decision::Conflict { current_status } => current_status,
                    _ => row.map(|r| r.status),
                },
                transition_id: None,
            }),
        }
    }

    fn transition(&self, cmd: &TransitionCommand) -> Result<Outcome, MemoryStoreError> {
        let policy = self.registry.get(&cmd.entity_type)?;
        let mut state = self.state.lock().map_err(|_| MemoryStoreError::Poisoned)?;
        let key = (cmd.entity_type.clone(), cmd.entity_id.clone());
        let row = state.rows.get(&key).cloned();
        let decision = decide(policy, row.as_ref(), cmd)?;
        Ok(state.execute(key, row.as_ref(), decision, cmd))
    }

    fn history(
        &self,
        entity_type: &str,
        entity_id: &str,
    ) -> Result<Vec<TransitionRecord>, MemoryStoreError> {
        self.registry.get(entity_type)?;
        let state = self.state.lock().map_err(|_| MemoryStoreError::Poisoned)?;
        Ok(state
            .history
            .iter()
            .filter(|t| t.entity_type == entity_type && t.entity_id == entity_id)
            .cloned()
            .collect())
    }
}
