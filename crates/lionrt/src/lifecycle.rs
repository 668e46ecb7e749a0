//! `lionrt lifecycle RUN_ID`: the status history of everything a run id
//! names (a session, invocation, play, schedule run, dispatch...), plus the
//! sessions an invocation spawned, in one timeline (on a SQLite file or a
//! PostgreSQL schema).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use lifecycle_core::{IdMatch, StateReader, TransitionRecord, default_registry};
use serde_json::json;

use crate::backend::Backend;
use crate::out;
use crate::view;

#[derive(Debug, Args)]
pub(crate) struct LifecycleArgs {
    /// The id (or unique prefix) of a session, invocation, play, show,
    /// team, schedule, schedule run or dispatch.
    run_id: String,
}

pub(crate) fn run(db: &Path, json: bool, args: LifecycleArgs) -> Result<ExitCode> {
    crate::backend::with_backend!(db, |b| timeline(b, json, &args))
}

/// The timeline on either store.
fn timeline<B: Backend>(backend: &B, json: bool, args: &LifecycleArgs) -> Result<ExitCode> {
    let reader = backend.reader();
    let mut entities = Vec::new();
    // An id that is itself an entity's id wins over prefixes of others (a
    // flow's invocation `ID` beside its sessions `ID-OP`).
    for policy in default_registry().iter() {
        let kind = policy.entity_type();
        if reader.match_id(kind, &args.run_id)? == IdMatch::One(args.run_id.clone()) {
            entities.push((kind.to_owned(), args.run_id.clone()));
        }
    }
    if entities.is_empty() {
        for policy in default_registry().iter() {
            if let Some(id) = view::resolve(reader, policy.entity_type(), &args.run_id)? {
                entities.push((policy.entity_type().to_owned(), id));
            }
        }
    }
    if entities.is_empty() {
        bail!(
            "nothing in {} has an id starting with {:?}",
            backend.location(),
            args.run_id
        );
    }
    for (kind, id) in entities.clone() {
        if kind == "invocation" {
            for s in reader.sessions_of_invocation(&id)? {
                if !entities.iter().any(|(k, i)| k == "session" && *i == s) {
                    entities.push(("session".to_owned(), s));
                }
            }
        }
    }
    let mut timeline: Vec<TransitionRecord> = Vec::new();
    for (kind, id) in &entities {
        timeline.extend(reader.transitions(kind, id)?);
    }
    timeline.sort_by_key(|t| (t.created_at, t.id));
    if json {
        let list: Vec<_> = entities
            .iter()
            .map(|(k, i)| json!({"entity_type": k, "id": i}))
            .collect();
        out::json(&json!({"entities": list, "transitions": timeline}));
        return Ok(ExitCode::SUCCESS);
    }
    for (kind, id) in &entities {
        out::line(format!("{kind} {id}"));
    }
    out::line("");
    out::line(format!(
        "{:<27} {:<12} {:<28} {:<16} {:<16} REASON",
        "AT", "TYPE", "ID", "FROM", "TO"
    ));
    for t in &timeline {
        out::line(format!(
            "{:<27} {:<12} {:<28} {:<16} {:<16} {}",
            out::timestamp(t.created_at),
            t.entity_type,
            view::one_line(&t.entity_id, 28),
            t.from_status.as_deref().unwrap_or("-"),
            t.to_status,
            t.reason_code
        ));
    }
    Ok(ExitCode::SUCCESS)
}
