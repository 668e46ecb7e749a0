//! `SessionRecorder` for the in-memory store: the same rules as the SQLite
//! store's session hooks, over `decide_with`.

use std::collections::BTreeMap;

use lifecycle_core::{
    Actor, CompatOptions, CoreError, Expected, MetadataUpdate, Outcome, OutcomeKind, Reason,
    SESSION_COLUMNS, SessionEnd, SessionRecorder, SessionSnapshot, SessionStart, TransitionCommand,
    decide_with, merge_metadata_key,
};
use serde_json::Value;

use crate::memory::{MemoryStore, MemoryStoreError};

const SESSION: &str = "session";

fn key(id: &str) -> (String, String) {
    (SESSION.to_owned(), id.to_owned())
}

fn usage_columns(end: &SessionEnd) -> Vec<(&'static str, Value)> {
    [
        ("input_tokens", end.usage.input_tokens.map(Value::from)),
        ("output_tokens", end.usage.output_tokens.map(Value::from)),
        ("total_cost_usd", end.usage.total_cost_usd.map(Value::from)),
        ("num_turns", end.usage.num_turns.map(Value::from)),
        ("duration_ms", end.usage.duration_ms.map(Value::from)),
    ]
    .into_iter()
    .filter_map(|(c, v)| v.map(|v| (c, v)))
    .collect()
}

impl SessionRecorder for MemoryStore {
    fn persist_session_start(
        &self,
        start: &SessionStart,
        actor: &Actor,
    ) -> Result<Outcome, MemoryStoreError> {
        let policy = self.registry().get(SESSION)?;
        self.with_state(|state| {
            let row = state.rows.get(&key(&start.session_id)).cloned();
            let mut cmd = TransitionCommand::new(
                SESSION,
                &start.session_id,
                "running",
                Reason::new(&start.reason_code),
                actor.clone(),
            );
            if row.is_none() {
                cmd.expected_statuses.insert(Expected::NoRow);
            }
            let opts = CompatOptions {
                enforce_edges: false,
                raise_on_unguarded_conflict: true,
                ..CompatOptions::default()
            };
            let outcome = state.execute(
                key(&start.session_id),
                row.as_ref(),
                decide_with(policy, row.as_ref(), &cmd, &opts)?,
                &cmd,
            );
            if outcome.result == OutcomeKind::Applied {
                let owner = start.owner.as_ref();
                let given: [(&str, Option<Value>); 12] = [
                    ("kind", start.kind.clone().map(Value::from)),
                    ("project", start.project.clone().map(Value::from)),
                    ("model", start.model.clone().map(Value::from)),
                    ("agent_name", start.agent_name.clone().map(Value::from)),
                    ("provider", start.provider.clone().map(Value::from)),
                    ("cwd", start.cwd.clone().map(Value::from)),
                    ("pid", start.pid.map(Value::from)),
                    (
                        "invocation_id",
                        start.invocation_id.clone().map(Value::from),
                    ),
                    ("owner_pid", owner.map(|o| Value::from(o.pid))),
                    (
                        "owner_start_time",
                        owner.and_then(|o| o.start_time).map(Value::from),
                    ),
                    (
                        "owner_boot_id",
                        owner.and_then(|o| o.boot_id.clone()).map(Value::from),
                    ),
                    (
                        "owner_host_id",
                        owner.and_then(|o| o.host_id.clone()).map(Value::from),
                    ),
                ];
                let set: BTreeMap<String, Value> = given
                    .into_iter()
                    .filter_map(|(c, v)| v.map(|v| (c.to_owned(), v)))
                    .collect();
                state.set_columns(&key(&start.session_id), &set);
            }
            Ok(outcome)
        })
    }

    fn persist_session_end(
        &self,
        end: &SessionEnd,
        actor: &Actor,
    ) -> Result<Outcome, MemoryStoreError> {
        let policy = self.registry().get(SESSION)?;
        let usage = usage_columns(end);
        self.with_state(|state| {
            let k = key(&end.session_id);
            let row = state
                .rows
                .get(&k)
                .cloned()
                .ok_or_else(|| CoreError::NotFound {
                    entity_type: SESSION.into(),
                    entity_id: end.session_id.clone(),
                })?;
            if policy.is_terminal(&row.status) {
                let set = usage.iter().map(|(c, v)| ((*c).to_owned(), v.clone()));
                state.set_columns(&k, &set.collect());
                return Ok(Outcome {
                    result: OutcomeKind::Applied,
                    previous_status: Some(row.status.clone()),
                    current_status: Some(row.status),
                    transition_id: None,
                });
            }
            let mut reason = Reason::new(&end.reason_code);
            if let Some(e) = &end.error {
                reason.summary = e.clone();
            }
            let mut cmd = TransitionCommand::new(
                SESSION,
                &end.session_id,
                &end.status,
                reason,
                actor.clone(),
            )
            .expecting(row.status.clone())
            .with_version(row.version)
            .with_patch("ended_at", Value::from(end.ended_at));
            for (c, v) in &usage {
                cmd = cmd.with_patch(*c, v.clone());
            }
            let decision = decide_with(policy, Some(&row), &cmd, &CompatOptions::default())?;
            Ok(state.execute(k, Some(&row), decision, &cmd))
        })
    }

    fn record_message(
        &self,
        session_id: &str,
        message_id: &str,
        _role: &str,
        _content: &str,
        at: i64,
    ) -> Result<bool, MemoryStoreError> {
        self.with_state(|state| {
            if state.messages.contains_key(message_id) {
                return Ok(false);
            }
            state
                .messages
                .insert(message_id.to_owned(), (session_id.to_owned(), at));
            if let Some(row) = state.rows.get_mut(&key(session_id)) {
                let last = row
                    .columns
                    .get("last_message_at")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                row.columns
                    .insert("last_message_at".into(), Value::from(last.max(at)));
            }
            Ok(true)
        })
    }

    fn update_session(
        &self,
        session_id: &str,
        columns: &BTreeMap<String, Value>,
    ) -> Result<bool, MemoryStoreError> {
        if let Some(bad) = columns
            .keys()
            .find(|c| !SESSION_COLUMNS.contains(&c.as_str()))
        {
            return Err(MemoryStoreError::ColumnNotAllowed {
                column: bad.clone(),
            });
        }
        self.with_state(|state| {
            let k = key(session_id);
            if !state.rows.contains_key(&k) {
                return Ok(false);
            }
            state.set_columns(&k, columns);
            Ok(true)
        })
    }

    /// Under the store's lock, like every other write: atomic.
    fn update_session_metadata(
        &self,
        session_id: &str,
        meta_key: &str,
        update: &mut dyn FnMut(Option<&Value>) -> Option<Value>,
    ) -> Result<MetadataUpdate, MemoryStoreError> {
        self.with_state(|state| {
            let k = key(session_id);
            let Some(row) = state.rows.get(&k) else {
                return Ok(MetadataUpdate::NotFound);
            };
            let stored = match row.columns.get("node_metadata") {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(other) => Some(other.to_string()),
            };
            let (outcome, text) = merge_metadata_key(stored.as_deref(), meta_key, update);
            if let Some(text) = text {
                let set = BTreeMap::from([("node_metadata".to_owned(), Value::String(text))]);
                state.set_columns(&k, &set);
            }
            Ok(outcome)
        })
    }

    fn session(&self, session_id: &str) -> Result<Option<SessionSnapshot>, MemoryStoreError> {
        self.with_state(|state| Ok(state.snapshot(&key(session_id))))
    }

    fn open_sessions(&self) -> Result<Vec<SessionSnapshot>, MemoryStoreError> {
        let policy = self.registry().get(SESSION)?;
        self.with_state(|state| {
            let mut open: Vec<(i64, SessionSnapshot)> = state
                .rows
                .iter()
                .filter(|(k, row)| k.0 == SESSION && !policy.is_terminal(&row.status))
                .filter_map(|(k, _)| {
                    let created = state.created.get(k).copied().unwrap_or(0);
                    state.snapshot(k).map(|s| (created, s))
                })
                .collect();
            open.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
            Ok(open.into_iter().map(|(_, s)| s).collect())
        })
    }

    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, MemoryStoreError> {
        self.with_state(|state| {
            Ok(state
                .rows
                .keys()
                .filter(|k| k.0 == SESSION && k.1.starts_with(prefix))
                .map(|k| k.1.clone())
                .take(limit)
                .collect())
        })
    }

    /// In this process's memory: one host.
    fn shared_by_hosts(&self) -> bool {
        false
    }
}
