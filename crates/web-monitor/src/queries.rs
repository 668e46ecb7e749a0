//! Every read of the monitor, written once over [`Source`]: the fleet
//! (paged sessions, grouped for triage, filtered and searched), one
//! session (row, spawn record, timeline, usage), its messages, schedules
//! and their runs, the outbox, admin events, costs, and the change feed's
//! head and changes. Every list is paged: a limit (capped at
//! [`MAX_PAGE`]) and a keyset cursor, never an unbounded query.

use lifecycle_core::default_registry;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::source::{Cell, Param, Row, Source, SourceError};

/// The largest page any list returns.
pub const MAX_PAGE: u32 = 200;
/// The page size when none is asked for.
pub const DEFAULT_PAGE: u32 = 50;

/// Builds a statement and its parameters, numbering `$N` in order.
struct Sql {
    text: String,
    params: Vec<Param>,
}

impl Sql {
    fn new(text: impl Into<String>) -> Self {
        Sql {
            text: text.into(),
            params: Vec::new(),
        }
    }

    /// Binds `p`; returns its placeholder.
    fn bind(&mut self, p: Param) -> String {
        self.params.push(p);
        format!("${}", self.params.len())
    }

    fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    fn run(&self, src: &dyn Source) -> Result<Vec<Row>, SourceError> {
        src.query(&self.text, &self.params)
    }
}

fn page_limit(limit: Option<u32>) -> u32 {
    limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
}

fn text(c: &Cell) -> Value {
    c.text()
        .map_or(Value::Null, |s| Value::String(s.to_owned()))
}

/// The triage groups of the fleet page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Running, and heard from within the quiet threshold.
    Working,
    /// Running but quiet for longer than the threshold: look at it.
    NeedsAttention,
    /// Ended well: completed or completed_empty.
    Done,
    /// Every other terminal status (failed, timed_out, aborted, cancelled).
    Failed,
}

impl Group {
    /// Every group, in the order the fleet page shows them.
    pub const ALL: [Group; 4] = [
        Group::NeedsAttention,
        Group::Working,
        Group::Done,
        Group::Failed,
    ];

    /// The group's name in JSON and URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Working => "working",
            Group::NeedsAttention => "needs_attention",
            Group::Done => "done",
            Group::Failed => "failed",
        }
    }
}

/// The statuses that count as done.
const DONE: [&str; 2] = ["completed", "completed_empty"];

/// The session statuses, open ones first (from the policy registry).
fn session_statuses() -> (Vec<String>, Vec<String>) {
    match default_registry().get("session") {
        Ok(p) => {
            let all: Vec<String> = p.statuses().iter().map(|s| (*s).to_owned()).collect();
            let (terminal, open): (Vec<String>, Vec<String>) =
                all.into_iter().partition(|s| p.is_terminal(s));
            (open, terminal)
        }
        Err(_) => (vec!["running".into()], Vec::new()),
    }
}

/// `status IN (...)` over `statuses` (never empty: `1 = 0` then).
fn status_in(sql: &mut Sql, column: &str, statuses: &[String]) -> String {
    if statuses.is_empty() {
        return "1 = 0".into();
    }
    let marks: Vec<String> = statuses
        .iter()
        .map(|s| sql.bind(Param::Text(s.clone())))
        .collect();
    format!("{column} IN ({})", marks.join(", "))
}

/// The SQL expression naming a session's group (quiet before `quiet_mark`).
fn group_case(sql: &mut Sql, quiet_before: i64) -> String {
    let (open, _) = session_statuses();
    let open_in = status_in(sql, "s.status", &open);
    let q = sql.bind(Param::Int(quiet_before));
    let done: Vec<String> = DONE.iter().map(|s| (*s).to_owned()).collect();
    let done_in = status_in(sql, "s.status", &done);
    format!(
        "CASE WHEN {open_in} AND COALESCE(s.last_message_at, s.updated_at) < {q} THEN 'needs_attention' \
         WHEN {open_in} THEN 'working' WHEN {done_in} THEN 'done' ELSE 'failed' END"
    )
}

/// Which sessions the fleet lists.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionQuery {
    /// Only this status.
    pub status: Option<String>,
    /// Only this provider.
    pub provider: Option<String>,
    /// Only this triage group.
    pub group: Option<Group>,
    /// Only sessions whose id, model, provider, cwd or reason contains
    /// this (case-insensitive for ASCII).
    pub q: Option<String>,
    /// Only sessions created at or after this time (microseconds).
    pub since: Option<i64>,
    /// The page size (at most [`MAX_PAGE`]).
    pub limit: Option<u32>,
    /// The page after this cursor (`next` of the previous page).
    pub before: Option<String>,
}

const SESSION_COLUMNS: &str = "s.id, s.status, s.status_reason_code, s.status_reason_summary, s.kind, \
     s.provider, s.model, s.cwd, s.pid, s.owner_pid, s.created_at, s.updated_at, s.ended_at, \
     s.last_message_at, s.input_tokens, s.output_tokens, s.total_cost_usd, s.num_turns, \
     s.duration_ms, (SELECT count(*) FROM messages m WHERE m.session_id = s.id)";

const SESSION_NAMES: [&str; 20] = [
    "id",
    "status",
    "reason_code",
    "reason_summary",
    "kind",
    "provider",
    "model",
    "cwd",
    "pid",
    "owner_pid",
    "created_at",
    "updated_at",
    "ended_at",
    "last_message_at",
    "input_tokens",
    "output_tokens",
    "total_cost_usd",
    "num_turns",
    "duration_ms",
    "messages",
];

fn object(names: &[&str], row: &[Cell]) -> serde_json::Map<String, Value> {
    names
        .iter()
        .zip(row)
        .map(|(n, c)| ((*n).to_owned(), c.json()))
        .collect()
}

/// A session row as JSON, with its group and its cost kept apart from
/// zero (`priced: false` when no cost was reported).
fn session_json(row: &[Cell], group: &Cell) -> Value {
    let mut o = object(&SESSION_NAMES, row);
    o.insert("group".into(), group.json());
    let priced = !matches!(row.get(16), Some(Cell::Null) | None);
    o.insert("priced".into(), priced.into());
    Value::Object(o)
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
fn like_pattern(needle: &str) -> String {
    let mut p = String::from("%");
    for ch in needle.to_ascii_lowercase().chars() {
        if matches!(ch, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(ch);
    }
    p.push('%');
    p
}

/// Parses a `created_at:id` keyset cursor.
fn keyset(cursor: &str) -> Option<(i64, String)> {
    let (at, id) = cursor.split_once(':')?;
    Some((at.parse().ok()?, id.to_owned()))
}

/// Why a request's parameters were refused.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A bad parameter.
    #[error("{0}")]
    Bad(String),
    /// The store refused.
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// The fleet: one page of sessions (newest first), the counts per group
/// and per provider under the same filters, and the cursor of the next
/// page.
///
/// # Errors
///
/// [`QueryError::Bad`] for a malformed cursor; the store's error.
pub fn fleet(src: &dyn Source, q: &SessionQuery, quiet_before: i64) -> Result<Value, QueryError> {
    let limit = page_limit(q.limit);
    let build =
        |sql: &mut Sql, with_group: bool, with_provider: bool| -> Result<Vec<String>, QueryError> {
            let mut clauses = Vec::new();
            if let Some(status) = &q.status {
                let p = sql.bind(Param::Text(status.clone()));
                clauses.push(format!("s.status = {p}"));
            }
            if with_provider && let Some(provider) = &q.provider {
                let p = sql.bind(Param::Text(provider.clone()));
                clauses.push(format!("s.provider = {p}"));
            }
            if let Some(since) = q.since {
                let p = sql.bind(Param::Int(since));
                clauses.push(format!("s.created_at >= {p}"));
            }
            if let Some(needle) = q.q.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                let p = sql.bind(Param::Text(like_pattern(needle)));
                let cols = [
                    "s.id",
                    "s.model",
                    "s.provider",
                    "s.cwd",
                    "s.status_reason_code",
                    "s.status_reason_summary",
                ];
                let any: Vec<String> = cols
                    .iter()
                    .map(|c| format!("lower(COALESCE({c}, '')) LIKE {p} ESCAPE '\\'"))
                    .collect();
                clauses.push(format!("({})", any.join(" OR ")));
            }
            if with_group && let Some(group) = q.group {
                let case = group_case(sql, quiet_before);
                let p = sql.bind(Param::Text(group.as_str().to_owned()));
                clauses.push(format!("({case}) = {p}"));
            }
            Ok(clauses)
        };
    // The page.
    let mut sql = Sql::new("");
    let case = group_case(&mut sql, quiet_before);
    sql.push(&format!("SELECT {SESSION_COLUMNS}, {case} FROM sessions s"));
    let mut clauses = build(&mut sql, true, true)?;
    if let Some(cursor) = &q.before {
        let (at, id) = keyset(cursor)
            .ok_or_else(|| QueryError::Bad(format!("not a page cursor: {cursor:?}")))?;
        let a = sql.bind(Param::Int(at));
        let i = sql.bind(Param::Text(id));
        clauses.push(format!(
            "(s.created_at < {a} OR (s.created_at = {a} AND s.id < {i}))"
        ));
    }
    if !clauses.is_empty() {
        sql.push(" WHERE ");
        sql.push(&clauses.join(" AND "));
    }
    let l = sql.bind(Param::Int(i64::from(limit) + 1));
    sql.push(&format!(" ORDER BY s.created_at DESC, s.id DESC LIMIT {l}"));
    let mut rows = sql.run(src)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| {
            format!(
                "{}:{}",
                r[10].int().unwrap_or_default(),
                r[0].text().unwrap_or_default()
            )
        })
    } else {
        None
    };
    let items: Vec<Value> = rows
        .iter()
        .map(|r| session_json(&r[..20], &r[20]))
        .collect();
    // Counts per group (under every filter but the group).
    let mut sql = Sql::new("");
    let case = group_case(&mut sql, quiet_before);
    sql.push(&format!("SELECT {case} AS g, count(*) FROM sessions s"));
    let clauses = build(&mut sql, false, true)?;
    if !clauses.is_empty() {
        sql.push(" WHERE ");
        sql.push(&clauses.join(" AND "));
    }
    sql.push(" GROUP BY g");
    let mut groups = serde_json::Map::new();
    for g in Group::ALL {
        groups.insert(g.as_str().into(), 0.into());
    }
    for r in sql.run(src)? {
        if let Some(g) = r[0].text() {
            groups.insert(g.to_owned(), r[1].json());
        }
    }
    // Counts per provider (under every filter but the provider), for the
    // filter's choices.
    let mut sql = Sql::new("SELECT COALESCE(s.provider, ''), count(*) FROM sessions s");
    let clauses = build(&mut sql, true, false)?;
    if !clauses.is_empty() {
        sql.push(" WHERE ");
        sql.push(&clauses.join(" AND "));
    }
    sql.push(" GROUP BY COALESCE(s.provider, '') ORDER BY 1");
    let providers: Vec<Value> = sql
        .run(src)?
        .iter()
        .map(|r| json!({"provider": r[0].json(), "sessions": r[1].json()}))
        .collect();
    let (open, terminal) = session_statuses();
    Ok(json!({
        "items": items,
        "next": next,
        "groups": groups,
        "providers": providers,
        "statuses": open.into_iter().chain(terminal).collect::<Vec<_>>(),
        "quiet_before": quiet_before,
    }))
}

const TRANSITION_COLUMNS: &str = "t.id, t.entity_type, t.entity_id, t.from_status, t.to_status, t.reason_code, \
     t.reason_summary, t.actor_type, t.actor_id, \
     CASE WHEN t.override_json IS NULL THEN 0 ELSE 1 END, t.created_at";

fn transition_json(r: &[Cell]) -> Value {
    json!({
        "id": r[0].json(), "entity_type": r[1].json(), "entity_id": r[2].json(),
        "from_status": r[3].json(), "to_status": r[4].json(), "reason_code": r[5].json(),
        "reason_summary": r[6].json(), "actor_type": r[7].json(), "actor_id": r[8].json(),
        "overridden": r[9].int() == Some(1), "created_at": r[10].json(),
    })
}

/// The most transitions one entity's timeline shows.
const TIMELINE_CAP: u32 = 500;

/// One session: its row, its spawn record, its lifecycle timeline (who
/// moved it, why, when) and its usage, or `None`.
///
/// # Errors
///
/// The store's error.
pub fn session(src: &dyn Source, id: &str, quiet_before: i64) -> Result<Option<Value>, QueryError> {
    let mut sql = Sql::new("");
    let case = group_case(&mut sql, quiet_before);
    let p = sql.bind(Param::Text(id.to_owned()));
    sql.push(&format!(
        "SELECT {SESSION_COLUMNS}, {case}, s.leg_pid, s.leg_pgid, s.leg_create_time, s.owner_host_id, \
         s.owner_start_time, s.invocation_id, s.project, s.agent_name \
         FROM sessions s WHERE s.id = {p}"
    ));
    let rows = sql.run(src)?;
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    let session = session_json(&r[..20], &r[20]);
    let spawn = json!({
        "leg_pid": r[21].json(), "leg_pgid": r[22].json(), "leg_create_time": r[23].json(),
        "owner_pid": r[9].json(), "owner_host_id": r[24].json(), "owner_start_time": r[25].json(),
        "invocation_id": r[26].json(), "project": r[27].json(), "agent_name": r[28].json(),
    });
    let usage = json!({
        "input_tokens": r[14].json(), "output_tokens": r[15].json(),
        "total_cost_usd": r[16].json(), "priced": !matches!(r[16], Cell::Null),
        "num_turns": r[17].json(), "duration_ms": r[18].json(),
    });
    let mut sql = Sql::new(format!(
        "SELECT {TRANSITION_COLUMNS} FROM status_transitions t WHERE t.entity_type = 'session' AND t.entity_id = "
    ));
    let p = sql.bind(Param::Text(id.to_owned()));
    sql.push(&p);
    let l = sql.bind(Param::Int(i64::from(TIMELINE_CAP)));
    sql.push(&format!(" ORDER BY t.id LIMIT {l}"));
    let timeline: Vec<Value> = sql.run(src)?.iter().map(|r| transition_json(r)).collect();
    Ok(Some(json!({
        "session": session, "spawn": spawn, "usage": usage, "timeline": timeline,
    })))
}

fn message_json(seq: &Cell, session: Option<&Cell>, r: &[Cell], cap: Option<usize>) -> Value {
    // r: id, branch_id, role, content, created_at
    let raw = r[3].text().unwrap_or_default();
    let (content, truncated) = match cap {
        Some(cap) if raw.len() > cap => {
            let mut end = cap;
            while !raw.is_char_boundary(end) {
                end -= 1;
            }
            (Value::String(raw[..end].to_owned()), true)
        }
        _ => (
            serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_owned())),
            false,
        ),
    };
    let mut o = json!({
        "seq": seq.json(), "id": r[0].json(), "branch_id": r[1].json(), "role": r[2].json(),
        "content": content, "created_at": r[4].json(),
    });
    if truncated {
        o["truncated"] = true.into();
    }
    if let Some(s) = session {
        o["session_id"] = s.json();
    }
    o
}

/// A session's messages after `after` (a seq; 0 for the first), in write
/// order, one page.
///
/// # Errors
///
/// The store's error.
pub fn messages(
    src: &dyn Source,
    id: &str,
    after: i64,
    limit: Option<u32>,
) -> Result<Value, QueryError> {
    let limit = page_limit(limit);
    let seq = src.dialect().message_seq();
    let mut sql = Sql::new(format!(
        "SELECT {seq}, m.id, m.branch_id, m.role, m.content, m.created_at FROM messages m WHERE m.session_id = "
    ));
    let p = sql.bind(Param::Text(id.to_owned()));
    sql.push(&p);
    let a = sql.bind(Param::Int(after));
    let l = sql.bind(Param::Int(i64::from(limit) + 1));
    sql.push(&format!(" AND {seq} > {a} ORDER BY {seq} LIMIT {l}"));
    let mut rows = sql.run(src)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().and_then(|r| r[0].int())
    } else {
        None
    };
    let items: Vec<Value> = rows
        .iter()
        .map(|r| message_json(&r[0], None, &r[1..], None))
        .collect();
    Ok(json!({"items": items, "next": next}))
}

/// A page of a list keyed by text id (schedules): after `after`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListQuery {
    /// The page size (at most [`MAX_PAGE`]).
    pub limit: Option<u32>,
    /// The page after this cursor.
    pub after: Option<String>,
    /// A status filter (outbox) or a kind prefix (admin events).
    pub status: Option<String>,
    /// Admin events: only kinds starting with this.
    pub kind: Option<String>,
}

/// Schedules (by id) with their last runs.
///
/// # Errors
///
/// The store's error.
pub fn schedules(src: &dyn Source, q: &ListQuery) -> Result<Value, QueryError> {
    let limit = page_limit(q.limit);
    let mut sql = Sql::new(
        "SELECT s.id, s.name, s.status, s.status_reason_code, s.next_fire_at, s.last_fire_at, \
         s.created_at, s.updated_at FROM schedules s",
    );
    if let Some(after) = &q.after {
        let p = sql.bind(Param::Text(after.clone()));
        sql.push(&format!(" WHERE s.id > {p}"));
    }
    let l = sql.bind(Param::Int(i64::from(limit) + 1));
    sql.push(&format!(" ORDER BY s.id LIMIT {l}"));
    let mut rows = sql.run(src)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().map(|r| text(&r[0]))
    } else {
        None
    };
    let names = [
        "id",
        "name",
        "status",
        "reason_code",
        "next_fire_at",
        "last_fire_at",
        "created_at",
        "updated_at",
    ];
    let items: Vec<Value> = rows
        .iter()
        .map(|r| Value::Object(object(&names, r)))
        .collect();
    let mut sql = Sql::new(
        "SELECT r.id, r.schedule_id, r.status, r.status_reason_code, r.created_at, r.ended_at, \
         r.session_id, r.due_at FROM schedule_runs r ORDER BY r.created_at DESC, r.id DESC LIMIT ",
    );
    let l = sql.bind(Param::Int(i64::from(DEFAULT_PAGE)));
    sql.push(&l);
    let run_names = [
        "id",
        "schedule_id",
        "status",
        "reason_code",
        "created_at",
        "ended_at",
        "session_id",
        "due_at",
    ];
    let runs: Vec<Value> = sql
        .run(src)?
        .iter()
        .map(|r| Value::Object(object(&run_names, r)))
        .collect();
    Ok(json!({"items": items, "next": next, "recent_runs": runs}))
}

/// The outbox, most recently changed first (`updated_at:id` cursor).
///
/// # Errors
///
/// [`QueryError::Bad`] for a malformed cursor; the store's error.
pub fn outbox(src: &dyn Source, q: &ListQuery) -> Result<Value, QueryError> {
    let limit = page_limit(q.limit);
    let mut sql = Sql::new(
        "SELECT o.id, o.status, o.attempt, o.max_attempts, o.next_attempt_at, o.last_error, \
         o.deliver_to, o.created_at, o.updated_at, o.expires_at FROM dispatch_outbox o",
    );
    let mut clauses = Vec::new();
    if let Some(status) = &q.status {
        let p = sql.bind(Param::Text(status.clone()));
        clauses.push(format!("o.status = {p}"));
    }
    if let Some(cursor) = &q.after {
        let (at, id) = keyset(cursor)
            .ok_or_else(|| QueryError::Bad(format!("not a page cursor: {cursor:?}")))?;
        let a = sql.bind(Param::Int(at));
        let i = sql.bind(Param::Text(id));
        clauses.push(format!(
            "(o.updated_at < {a} OR (o.updated_at = {a} AND o.id < {i}))"
        ));
    }
    if !clauses.is_empty() {
        sql.push(" WHERE ");
        sql.push(&clauses.join(" AND "));
    }
    let l = sql.bind(Param::Int(i64::from(limit) + 1));
    sql.push(&format!(" ORDER BY o.updated_at DESC, o.id DESC LIMIT {l}"));
    let mut rows = sql.run(src)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().map(|r| {
            format!(
                "{}:{}",
                r[8].int().unwrap_or_default(),
                r[0].text().unwrap_or_default()
            )
        })
    } else {
        None
    };
    let names = [
        "id",
        "status",
        "attempt",
        "max_attempts",
        "next_attempt_at",
        "last_error",
        "deliver_to",
        "created_at",
        "updated_at",
        "expires_at",
    ];
    let items: Vec<Value> = rows
        .iter()
        .map(|r| Value::Object(object(&names, r)))
        .collect();
    let mut sql = Sql::new(
        "SELECT o.status, count(*) FROM dispatch_outbox o GROUP BY o.status ORDER BY o.status",
    );
    sql.push("");
    let counts: serde_json::Map<String, Value> = sql
        .run(src)?
        .iter()
        .filter_map(|r| Some((r[0].text()?.to_owned(), r[1].json())))
        .collect();
    Ok(json!({"items": items, "next": next, "counts": counts}))
}

const ADMIN_COLUMNS: &str = "a.id, a.kind, a.entity_type, a.entity_id, a.actor_type, a.actor_id, a.detail_json, a.created_at";

fn admin_json(r: &[Cell]) -> Value {
    let detail = r[6]
        .text()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .unwrap_or_else(|| r[6].json());
    json!({
        "id": r[0].json(), "kind": r[1].json(), "entity_type": r[2].json(), "entity_id": r[3].json(),
        "actor_type": r[4].json(), "actor_id": r[5].json(), "detail": detail, "created_at": r[7].json(),
    })
}

/// Admin events (MCP audit, refusals, overrides, prunes), newest first
/// (`after` is an id: the page of older rows).
///
/// # Errors
///
/// [`QueryError::Bad`] for a malformed cursor; the store's error.
pub fn admin_events(src: &dyn Source, q: &ListQuery) -> Result<Value, QueryError> {
    let limit = page_limit(q.limit);
    let mut sql = Sql::new(format!("SELECT {ADMIN_COLUMNS} FROM admin_events a"));
    let mut clauses = Vec::new();
    if let Some(kind) = q.kind.as_deref().filter(|k| !k.is_empty()) {
        let mut pattern = String::new();
        for ch in kind.chars() {
            if matches!(ch, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(ch);
        }
        pattern.push('%');
        let p = sql.bind(Param::Text(pattern));
        clauses.push(format!("a.kind LIKE {p} ESCAPE '\\'"));
    }
    if let Some(after) = &q.after {
        let id: i64 = after
            .parse()
            .map_err(|_| QueryError::Bad(format!("not a page cursor: {after:?}")))?;
        let p = sql.bind(Param::Int(id));
        clauses.push(format!("a.id < {p}"));
    }
    if !clauses.is_empty() {
        sql.push(" WHERE ");
        sql.push(&clauses.join(" AND "));
    }
    let l = sql.bind(Param::Int(i64::from(limit) + 1));
    sql.push(&format!(" ORDER BY a.id DESC LIMIT {l}"));
    let mut rows = sql.run(src)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().map(|r| r[0].json())
    } else {
        None
    };
    let items: Vec<Value> = rows.iter().map(|r| admin_json(r)).collect();
    Ok(json!({"items": items, "next": next}))
}

/// Spend since `since` (microseconds) by provider and model: sessions,
/// those with a reported cost and those without ("unpriced", never
/// counted as zero), the priced total, and tokens.
///
/// # Errors
///
/// The store's error.
pub fn costs(src: &dyn Source, since: i64) -> Result<Value, QueryError> {
    let mut sql = Sql::new(
        "SELECT COALESCE(s.provider, ''), COALESCE(s.model, ''), count(*), \
         CAST(sum(CASE WHEN s.total_cost_usd IS NULL THEN 1 ELSE 0 END) AS BIGINT), \
         sum(s.total_cost_usd), CAST(sum(s.input_tokens) AS BIGINT), \
         CAST(sum(s.output_tokens) AS BIGINT) FROM sessions s WHERE s.created_at >= ",
    );
    let p = sql.bind(Param::Int(since));
    sql.push(&p);
    sql.push(" GROUP BY COALESCE(s.provider, ''), COALESCE(s.model, '') ORDER BY 1, 2");
    let mut total = 0.0;
    let mut unpriced = 0;
    let rows: Vec<Value> = sql
        .run(src)?
        .iter()
        .map(|r| {
            let sessions = r[2].int().unwrap_or(0);
            let none = r[3].int().unwrap_or(0);
            unpriced += none;
            let cost = r[4].real();
            total += cost.unwrap_or(0.0);
            json!({
                "provider": r[0].json(), "model": r[1].json(), "sessions": sessions,
                "priced_sessions": sessions - none, "unpriced_sessions": none,
                "cost_usd": cost, "input_tokens": r[5].json(), "output_tokens": r[6].json(),
            })
        })
        .collect();
    Ok(
        json!({"since": since, "rows": rows, "total_cost_usd": total, "unpriced_sessions": unpriced}),
    )
}

/// A position in the store's change streams: the last status transition,
/// message (by write order) and admin event seen. An SSE event's id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cursor {
    /// `status_transitions.id`.
    pub transition: i64,
    /// The message's write-order seq.
    pub message: i64,
    /// `admin_events.id`.
    pub admin: i64,
}

impl Cursor {
    /// `t-m-a`, the SSE event id form.
    pub fn to_id(self) -> String {
        format!("{}-{}-{}", self.transition, self.message, self.admin)
    }

    /// Parses `t-m-a`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let mut it = text.trim().split('-');
        let c = Cursor {
            transition: it.next()?.parse().ok()?,
            message: it.next()?.parse().ok()?,
            admin: it.next()?.parse().ok()?,
        };
        if it.next().is_some() || c.transition < 0 || c.message < 0 || c.admin < 0 {
            return None;
        }
        Some(c)
    }

    /// Whether every component is at or below `other`'s.
    pub fn within(self, other: Cursor) -> bool {
        self.transition <= other.transition
            && self.message <= other.message
            && self.admin <= other.admin
    }

    /// The componentwise maximum.
    pub fn max(self, other: Cursor) -> Cursor {
        Cursor {
            transition: self.transition.max(other.transition),
            message: self.message.max(other.message),
            admin: self.admin.max(other.admin),
        }
    }
}

/// The head of the change streams, in one statement (one snapshot).
///
/// Messages are only written to sessions that are open (or whose status
/// changed since `since`, the last head: a leg's last message commits
/// before its terminal transition), so the message head is read only over
/// those sessions, through the `(session_id, ...)` indexes, never by a
/// scan of every message.
///
/// # Errors
///
/// The store's error.
pub fn head(src: &dyn Source, since: Cursor) -> Result<Cursor, QueryError> {
    let seq = src.dialect().message_seq();
    let mut sql = Sql::new("");
    let sessions = live_sessions(&mut sql, since.transition);
    sql.text = format!(
        "SELECT (SELECT COALESCE(max(t.id), 0) FROM status_transitions t), \
         (SELECT COALESCE(max({seq}), 0) FROM messages m WHERE m.session_id IN ({sessions})), \
         (SELECT COALESCE(max(a.id), 0) FROM admin_events a)"
    );
    let rows = sql.run(src)?;
    let r = rows
        .first()
        .ok_or_else(|| QueryError::Bad("no head row".into()))?;
    let head = Cursor {
        transition: r[0].int().unwrap_or(0),
        message: r[1].int().unwrap_or(0),
        admin: r[2].int().unwrap_or(0),
    };
    // The head never moves back (the session holding the last message
    // may have ended before `since` and left the set).
    Ok(head.max(since))
}

/// The sessions that may have new messages: open ones, and those whose
/// status changed after transition `after`.
fn live_sessions(sql: &mut Sql, after: i64) -> String {
    let (open, _) = session_statuses();
    let open_in = status_in(sql, "s.status", &open);
    let p = sql.bind(Param::Int(after));
    format!(
        "SELECT s.id FROM sessions s WHERE {open_in} \
         UNION SELECT t.entity_id FROM status_transitions t WHERE t.entity_type = 'session' AND t.id > {p}"
    )
}

/// One change, for the event stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `transition`, `message` or `admin`.
    pub kind: &'static str,
    /// The cursor once this change is seen (the SSE event id).
    pub cursor: Cursor,
    /// The session it concerns, if any.
    pub session: Option<String>,
    /// The change as JSON.
    pub data: Value,
    /// When, microseconds.
    at: i64,
}

/// The biggest message content an event carries (the page fetches the
/// whole message from the API).
pub const EVENT_CONTENT_CAP: usize = 8 * 1024;

/// The changes after `from` up to `to` (each stream in write order, at
/// most `limit` of each kind), merged by time; each change carries the
/// cursor once it is seen. Returns the changes and the cursor reached
/// (`to` unless a kind had more than `limit`).
///
/// # Errors
///
/// The store's error.
pub fn changes(
    src: &dyn Source,
    from: Cursor,
    to: Cursor,
    limit: u32,
) -> Result<(Vec<Change>, Cursor), QueryError> {
    let lim = i64::from(limit.max(1));
    let mut transitions: Vec<Change> = Vec::new();
    let mut messages: Vec<Change> = Vec::new();
    let mut admins: Vec<Change> = Vec::new();
    let mut reached = to;
    if to.transition > from.transition {
        let mut sql = Sql::new(format!(
            "SELECT {TRANSITION_COLUMNS} FROM status_transitions t WHERE t.id > "
        ));
        let a = sql.bind(Param::Int(from.transition));
        let b = sql.bind(Param::Int(to.transition));
        let l = sql.bind(Param::Int(lim));
        sql.push(&format!("{a} AND t.id <= {b} ORDER BY t.id LIMIT {l}"));
        let rows = sql.run(src)?;
        if rows.len() as i64 == lim
            && let Some(last) = rows.last().and_then(|r| r[0].int())
        {
            reached.transition = last;
        }
        for r in &rows {
            let session = (r[1].text() == Some("session"))
                .then(|| r[2].text().unwrap_or_default().to_owned());
            transitions.push(Change {
                kind: "transition",
                cursor: Cursor {
                    transition: r[0].int().unwrap_or(0),
                    ..Cursor::default()
                },
                session,
                data: transition_json(r),
                at: r[10].int().unwrap_or(0),
            });
        }
    }
    if to.message > from.message {
        let seq = src.dialect().message_seq();
        let mut sql = Sql::new("");
        let sessions = live_sessions(&mut sql, from.transition);
        let a = sql.bind(Param::Int(from.message));
        let b = sql.bind(Param::Int(to.message));
        let l = sql.bind(Param::Int(lim));
        sql.text = format!(
            "SELECT {seq}, m.session_id, m.id, m.branch_id, m.role, m.content, m.created_at \
             FROM messages m WHERE m.session_id IN ({sessions}) AND {seq} > {a} AND {seq} <= {b} \
             ORDER BY {seq} LIMIT {l}"
        );
        let rows = sql.run(src)?;
        if rows.len() as i64 == lim
            && let Some(last) = rows.last().and_then(|r| r[0].int())
        {
            reached.message = last;
        }
        for r in &rows {
            messages.push(Change {
                kind: "message",
                cursor: Cursor {
                    message: r[0].int().unwrap_or(0),
                    ..Cursor::default()
                },
                session: r[1].text().map(str::to_owned),
                data: message_json(&r[0], Some(&r[1]), &r[2..], Some(EVENT_CONTENT_CAP)),
                at: r[6].int().unwrap_or(0),
            });
        }
    }
    if to.admin > from.admin {
        let mut sql = Sql::new(format!(
            "SELECT {ADMIN_COLUMNS} FROM admin_events a WHERE a.id > "
        ));
        let a = sql.bind(Param::Int(from.admin));
        let b = sql.bind(Param::Int(to.admin));
        let l = sql.bind(Param::Int(lim));
        sql.push(&format!("{a} AND a.id <= {b} ORDER BY a.id LIMIT {l}"));
        let rows = sql.run(src)?;
        if rows.len() as i64 == lim
            && let Some(last) = rows.last().and_then(|r| r[0].int())
        {
            reached.admin = last;
        }
        for r in &rows {
            let session = (r[2].text() == Some("session"))
                .then(|| r[3].text().unwrap_or_default().to_owned());
            admins.push(Change {
                kind: "admin",
                cursor: Cursor {
                    admin: r[0].int().unwrap_or(0),
                    ..Cursor::default()
                },
                session,
                data: admin_json(r),
                at: r[7].int().unwrap_or(0),
            });
        }
    }
    // Merge by time, each kind kept in its write order (a clock that
    // stepped back never reorders one stream), and make every cursor
    // cumulative: an event's id covers everything sent before it.
    let mut out = Vec::with_capacity(transitions.len() + messages.len() + admins.len());
    let mut lists = [
        transitions.into_iter().peekable(),
        messages.into_iter().peekable(),
        admins.into_iter().peekable(),
    ];
    let mut seen = from;
    loop {
        let next = lists
            .iter_mut()
            .enumerate()
            .filter_map(|(i, l)| l.peek().map(|c| (c.at, i)))
            .min();
        let Some((_, i)) = next else { break };
        let Some(mut c) = lists[i].next() else { break };
        seen = seen.max(c.cursor);
        c.cursor = seen;
        out.push(c);
    }
    Ok((out, reached))
}
