-- 0001_initial (PostgreSQL): the lifecycle tables of state-sqlite's
-- migrations 0001-0003 in one step, typed for PostgreSQL. Times are BIGINT
-- microseconds since the Unix epoch; updated_at doubles as the
-- optimistic-concurrency version and is bumped by every write. Integer
-- flags stay BIGINT 0/1 so rows read back exactly as on SQLite.

CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_at BIGINT,
    ended_at_is_approximate BIGINT,
    input_tokens BIGINT,
    output_tokens BIGINT,
    total_cost_usd DOUBLE PRECISION,
    num_turns BIGINT,
    duration_ms BIGINT,
    current_phase TEXT,
    node_metadata TEXT,
    kind TEXT,
    project TEXT,
    model TEXT,
    agent_name TEXT,
    provider TEXT,
    cwd TEXT,
    pid BIGINT,
    invocation_id TEXT,
    last_message_at BIGINT,
    owner_pid BIGINT,
    owner_start_time BIGINT,
    owner_boot_id TEXT,
    leg_pid BIGINT,
    leg_pgid BIGINT,
    leg_create_time BIGINT
);
CREATE INDEX sessions_status ON sessions (status);

CREATE TABLE invocations (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_at BIGINT
);

CREATE TABLE shows (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    status_source TEXT
);

CREATE TABLE plays (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_at BIGINT,
    exit_code BIGINT,
    merge_sha TEXT,
    merged_at BIGINT,
    gate_passed BIGINT,
    gate_feedback TEXT
);

CREATE TABLE teams (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE schedules (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE schedule_runs (
    id TEXT PRIMARY KEY NOT NULL,
    schedule_id TEXT REFERENCES schedules(id),
    status TEXT NOT NULL,
    status_reason_code TEXT,
    status_reason_summary TEXT,
    status_reason_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_at BIGINT,
    exit_code BIGINT,
    error_detail TEXT,
    invocation_id TEXT,
    queued_at BIGINT,
    leased_by TEXT,
    lease_expires_at BIGINT,
    lease_attempts BIGINT
);

CREATE TABLE dispatch_outbox (
    id TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    attempt BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    last_error TEXT,
    dedup_key TEXT UNIQUE,
    payload TEXT,
    deliver_to TEXT,
    template_json TEXT,
    max_attempts BIGINT NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    ack_required BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at BIGINT
);
CREATE INDEX dispatch_outbox_due ON dispatch_outbox (status, next_attempt_at);
CREATE INDEX dispatch_outbox_expiry ON dispatch_outbox (status, expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX dispatch_outbox_written ON dispatch_outbox (status, updated_at);

CREATE TABLE status_transitions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    created_at BIGINT NOT NULL
);
CREATE INDEX status_transitions_entity ON status_transitions (entity_type, entity_id, id);
CREATE INDEX status_transitions_to_status ON status_transitions (entity_type, to_status);

CREATE TABLE admin_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT,
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX admin_events_entity ON admin_events (entity_type, entity_id);

CREATE TABLE messages (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    branch_id TEXT,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, created_at);
