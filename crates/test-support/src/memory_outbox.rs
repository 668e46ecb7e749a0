//! An in-memory outbox store over the same `decide_with()` as the SQLite one.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lifecycle_core::{
    Actor, CoreError, Decision, Policy, RowSnapshot, TransitionRecord, decide_with,
    default_registry,
};
use outbox::{
    AuditRecord, DispatchMove, DispatchRow, DispatchStatus, ENTITY, Enqueued, ListQuery,
    MoveOutcome, NewDispatch, OutboxStore, PurgeReport, PurgeSelection,
};
use serde_json::json;

/// What the in-memory outbox can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryOutboxError {
    /// A lifecycle rule was broken.
    #[error(transparent)]
    Rule(#[from] CoreError),
    /// A previous holder of the lock panicked.
    #[error("memory outbox lock poisoned")]
    Poisoned,
}

#[derive(Debug, Default)]
struct State {
    rows: BTreeMap<String, DispatchRow>,
    /// Insertion order, for listings.
    order: Vec<String>,
    history: Vec<TransitionRecord>,
    audit: Vec<AuditRecord>,
    clock: i64,
}

impl State {
    /// The store's own clock, as SQLite's `updated_at`: wall time in
    /// microseconds, strictly increasing.
    fn tick(&mut self) -> i64 {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        self.clock = wall.max(self.clock + 1);
        self.clock
    }

    fn record(&mut self, id: &str, from: Option<DispatchStatus>, mv: (&str, &str, &Actor)) -> i64 {
        let (to, code, actor) = mv;
        let at = self.tick();
        let tid = i64::try_from(self.history.len()).unwrap_or(i64::MAX) + 1;
        self.history.push(TransitionRecord {
            id: tid,
            entity_type: ENTITY.to_owned(),
            entity_id: id.to_owned(),
            from_status: from.map(|s| s.as_str().to_owned()),
            to_status: to.to_owned(),
            reason_code: code.to_owned(),
            reason_summary: String::new(),
            actor_type: actor.kind.as_str().to_owned(),
            actor_id: actor.id.clone(),
            overridden: false,
            created_at: at,
        });
        tid
    }

    fn listed(&self) -> impl Iterator<Item = &DispatchRow> {
        self.order.iter().filter_map(|id| self.rows.get(id))
    }
}

/// An in-memory [`OutboxStore`]. Each call holds one lock for its whole
/// read-decide-write, the analogue of one `BEGIN IMMEDIATE` transaction;
/// moves run the default `dispatch` policy through
/// [`lifecycle_core::decide_with`], exactly as the SQLite store does.
#[derive(Debug)]
pub struct MemoryOutbox {
    policy: Policy,
    state: Mutex<State>,
}

impl Default for MemoryOutbox {
    fn default() -> Self {
        let policy = default_registry()
            .get(ENTITY)
            .map(|p| (**p).clone())
            .expect("the default registry has the dispatch policy");
        MemoryOutbox {
            policy,
            state: Mutex::new(State::default()),
        }
    }
}

impl MemoryOutbox {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, MemoryOutboxError> {
        self.state.lock().map_err(|_| MemoryOutboxError::Poisoned)
    }
}

impl OutboxStore for MemoryOutbox {
    type Error = MemoryOutboxError;

    fn enqueue(
        &self,
        id: &str,
        new: &NewDispatch,
        actor: &Actor,
        now: i64,
    ) -> Result<Enqueued, MemoryOutboxError> {
        let mut st = self.lock()?;
        if let Some(key) = &new.dedup_key
            && let Some(row) = st.rows.values().find(|r| r.dedup_key.as_ref() == Some(key))
        {
            return Ok(Enqueued {
                id: row.id.clone(),
                created: false,
            });
        }
        let at = st.tick();
        let row = DispatchRow {
            id: id.to_owned(),
            status: DispatchStatus::Pending,
            attempt: 0,
            max_attempts: new.max_attempts,
            next_attempt_at: Some(new.not_before.unwrap_or(now)),
            last_error: None,
            dedup_key: new.dedup_key.clone(),
            payload: new.payload.clone(),
            deliver_to: new.deliver_to.clone(),
            template: new.template.clone(),
            ack_required: new.ack_required,
            expires_at: new.expires_at,
            created_at: at,
            updated_at: at,
        };
        st.rows.insert(id.to_owned(), row);
        st.order.push(id.to_owned());
        st.record(id, None, ("pending", "dispatch.pending.enqueued", actor));
        Ok(Enqueued {
            id: id.to_owned(),
            created: true,
        })
    }

    fn get(&self, id: &str) -> Result<Option<DispatchRow>, MemoryOutboxError> {
        Ok(self.lock()?.rows.get(id).cloned())
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<DispatchRow>, MemoryOutboxError> {
        let st = self.lock()?;
        Ok(st
            .listed()
            .filter(|r| query.status.is_none_or(|s| r.status == s))
            .take(query.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    fn due(&self, now: i64, limit: usize) -> Result<Vec<DispatchRow>, MemoryOutboxError> {
        let st = self.lock()?;
        let mut rows: Vec<DispatchRow> = st
            .rows
            .values()
            .filter(|r| match r.status {
                DispatchStatus::Pending => {
                    r.next_attempt_at.is_none_or(|n| n <= now)
                        || r.expires_at.is_some_and(|e| e <= now)
                }
                DispatchStatus::Delivering => r.next_attempt_at.is_some_and(|n| n <= now),
                _ => false,
            })
            .cloned()
            .collect();
        rows.sort_by(|a, b| (a.next_attempt_at, &a.id).cmp(&(b.next_attempt_at, &b.id)));
        rows.truncate(limit);
        Ok(rows)
    }

    fn apply(&self, mv: &DispatchMove) -> Result<MoveOutcome, MemoryOutboxError> {
        let mut st = self.lock()?;
        let snapshot = st.rows.get(&mv.id).map(|r| RowSnapshot {
            status: r.status.as_str().to_owned(),
            version: r.updated_at,
            columns: BTreeMap::from([("attempt".to_owned(), json!(r.attempt))]),
        });
        let (cmd, opts) = (mv.command(), mv.guard());
        let decision = match decide_with(&self.policy, snapshot.as_ref(), &cmd, &opts) {
            Ok(d) => d,
            Err(CoreError::NotFound { .. }) => return Ok(MoveOutcome::NotFound),
            Err(e) => return Err(e.into()),
        };
        let current = st
            .rows
            .get(&mv.id)
            .map(|r| (r.status, r.attempt))
            .unwrap_or((mv.from, mv.expected_attempt));
        match decision {
            Decision::Write(_) => {
                let from = current.0;
                let tid = st.record(
                    &mv.id,
                    Some(from),
                    (mv.to.as_str(), &mv.reason.code, &mv.actor),
                );
                let at = st.clock;
                let row = st
                    .rows
                    .get_mut(&mv.id)
                    .expect("row read under the same lock");
                row.status = mv.to;
                row.updated_at = at;
                if let Some(a) = mv.patch.attempt {
                    row.attempt = a;
                }
                if let Some(n) = mv.patch.next_attempt_at {
                    row.next_attempt_at = n;
                }
                if let Some(e) = &mv.patch.last_error {
                    row.last_error.clone_from(e);
                }
                if let Some(e) = mv.expires_at {
                    row.expires_at = e;
                }
                Ok(MoveOutcome::Applied { transition_id: tid })
            }
            Decision::Noop { .. } => Ok(MoveOutcome::Conflict {
                current: current.0,
                attempt: current.1,
            }),
            Decision::Conflict { .. } => Ok(MoveOutcome::Conflict {
                current: current.0,
                attempt: current.1,
            }),
            Decision::Reject { rejection, .. } => {
                st.audit.push(AuditRecord {
                    kind: "transition.rejected".into(),
                    entity_id: Some(mv.id.clone()),
                    actor: mv.actor.clone(),
                    detail: json!({
                        "rejection": rejection.as_str(),
                        "from_status": current.0,
                        "to_status": mv.to,
                        "reason_code": mv.reason.code,
                    }),
                });
                Ok(MoveOutcome::Rejected { current: current.0 })
            }
        }
    }

    fn purge(&self, id: &str, actor: &Actor) -> Result<Option<DispatchStatus>, MemoryOutboxError> {
        let mut st = self.lock()?;
        let Some(row) = st.rows.remove(id) else {
            return Ok(None);
        };
        st.order.retain(|o| o != id);
        st.audit.push(AuditRecord {
            kind: "dispatch.purge".into(),
            entity_id: Some(id.to_owned()),
            actor: actor.clone(),
            detail: json!({"status": row.status}),
        });
        Ok(Some(row.status))
    }

    fn purge_many(
        &self,
        selection: &PurgeSelection,
        dry_run: bool,
        actor: &Actor,
    ) -> Result<PurgeReport, MemoryOutboxError> {
        let mut st = self.lock()?;
        let mut ids: Vec<String> = st
            .rows
            .values()
            .filter(|r| selection.matches(r))
            .map(|r| r.id.clone())
            .collect();
        ids.sort();
        if !dry_run {
            for id in &ids {
                st.rows.remove(id);
            }
            st.order.retain(|o| !ids.contains(o));
        }
        st.audit.push(AuditRecord {
            kind: "dispatch.purge_bulk".into(),
            entity_id: None,
            actor: actor.clone(),
            detail: json!({
                "status": selection.status(),
                "statuses": selection.statuses(),
                "before": selection.before(),
                "dry_run": dry_run,
                "count": ids.len(),
                "ids": ids,
            }),
        });
        Ok(PurgeReport { ids, dry_run })
    }

    fn sweep_terminal(&self, before: i64) -> Result<u64, MemoryOutboxError> {
        let mut st = self.lock()?;
        let gone: Vec<String> = st
            .rows
            .values()
            .filter(|r| r.status.is_terminal() && r.updated_at < before)
            .map(|r| r.id.clone())
            .collect();
        for id in &gone {
            st.rows.remove(id);
        }
        st.order.retain(|o| !gone.contains(o));
        Ok(u64::try_from(gone.len()).unwrap_or(u64::MAX))
    }

    fn history(&self, id: &str) -> Result<Vec<TransitionRecord>, MemoryOutboxError> {
        Ok(self
            .lock()?
            .history
            .iter()
            .filter(|t| t.entity_id == id)
            .cloned()
            .collect())
    }

    fn audit(&self) -> Result<Vec<AuditRecord>, MemoryOutboxError> {
        Ok(self.lock()?.audit.clone())
    }
}
