//! An in-memory lifecycle store over `decide()`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lifecycle_core::{
    CoreError, Decision, InitialCommand, LifecycleStore, Outcome, OutcomeKind, PolicyRegistry,
    RowSnapshot, TransitionCommand, TransitionRecord, decide, decide_initial, default_registry,
};

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
}

#[derive(Debug, Default)]
struct State {
    rows: BTreeMap<(String, String), RowSnapshot>,
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
        let previous = row.as_ref().map(|r| r.status.clone());
        let unchanged = |result| Outcome {
            result,
            previous_status: previous.clone(),
            current_status: previous.clone(),
            transition_id: None,
        };
        Ok(match decide(policy, row.as_ref(), cmd)? {
            Decision::Write(plan) => apply(
                &mut state,
                key,
                previous.clone(),
                &plan,
                &cmd.reason,
                &cmd.actor,
            ),
            Decision::Noop { .. } => unchanged(OutcomeKind::Applied),
            Decision::Conflict { .. } => unchanged(OutcomeKind::Conflict),
            Decision::Reject { .. } => {
                state.rejections += 1;
                unchanged(OutcomeKind::Rejected)
            }
        })
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
