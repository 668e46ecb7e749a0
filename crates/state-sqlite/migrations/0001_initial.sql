-- 0001_initial: every lifecycle entity table, history, audit, deliveries,
-- session controls and the message tables. Times are INTEGER microseconds
-- since the Unix epoch; updated_at doubles as the optimistic-concurrency
-- version and is bumped by every write.

CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER,
    ended_at_is_approximate INTEGER,
    input_tokens INTEGER,
    output_tokens INTEGER,
    total_cost_usd REAL,
    num_turns INTEGER,
    duration_ms INTEGER,
    current_phase TEXT,
    node_metadata TEXT,
    kind TEXT,
    project TEXT,
    model TEXT,
    agent_name TEXT,
    provider TEXT,
    cwd TEXT,
    pid INTEGER,
    invocation_id TEXT,
    last_message_at INTEGER
);

CREATE TABLE invocations (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER
);

CREATE TABLE shows (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    status_source TEXT
);

CREATE TABLE plays (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER,
    exit_code INTEGER,
    merge_sha TEXT,
    merged_at INTEGER,
    gate_passed INTEGER,
    gate_feedback TEXT
);

CREATE TABLE teams (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE schedules (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- schedule_id is nullable: a schedule run is also the generalized
-- task-application entity with no schedule behind it.
CREATE TABLE schedule_runs (
    id TEXT PRIMARY KEY NOT NULL,
    schedule_id TEXT REFERENCES schedules(id),
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER,
    exit_code INTEGER,
    error_detail TEXT,
    invocation_id TEXT,
    queued_at INTEGER,
    leased_by TEXT,
    lease_expires_at INTEGER,
    lease_attempts INTEGER
);

-- No status_reason_* columns: dispatch rows are only moved through the
-- legacy transition surface, which never writes them.
CREATE TABLE dispatch_outbox (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    last_error TEXT,
    dedup_key TEXT UNIQUE,
    payload TEXT
);

CREATE TABLE status_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    reason_summary TEXT NOT NULL DEFAULT '',
    reason_json TEXT NOT NULL DEFAULT '{}',
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    override_json TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX status_transitions_entity ON status_transitions (entity_type, entity_id, id);
CREATE INDEX status_transitions_to_status ON status_transitions (entity_type, to_status);

CREATE TABLE admin_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT,
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX admin_events_entity ON admin_events (entity_type, entity_id);

CREATE TABLE transition_deliveries (
    consumer TEXT NOT NULL,
    transition_id INTEGER NOT NULL REFERENCES status_transitions(id),
    delivered_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, transition_id)
);

CREATE TABLE session_controls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    verb TEXT NOT NULL CHECK (verb IN ('pause', 'resume', 'message', 'stop')),
    payload TEXT,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'applying', 'applied', 'rejected')),
    detail TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX session_controls_pending ON session_controls (session_id, state, id);

CREATE TABLE messages (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    branch_id TEXT,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, created_at);

CREATE TABLE branches (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    first_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    last_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    system_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL
);
-- Plain (never partial) indexes: SQLite's foreign-key lookup on a message
-- delete is not planned by the query planner, and only a plain index is
-- certain to serve it (8.47 ms/row -> 0.86 ms/row on a 3.9 GB store).
CREATE INDEX branches_first_msg_id ON branches (first_msg_id);
CREATE INDEX branches_last_msg_id ON branches (last_msg_id);
CREATE INDEX branches_system_msg_id ON branches (system_msg_id);
