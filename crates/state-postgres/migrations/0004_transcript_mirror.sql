-- 0004_transcript_mirror (PostgreSQL): state-sqlite's 0005 plus the
-- branches table SQLite has had since 0001. A progression is the ordered,
-- deduplicated list of a branch's message ids: the primary key makes each
-- id appear at most once, position keeps the order, and next_position
-- (read FOR UPDATE by the writer, so writers of one progression queue)
-- hands out dense positions. mirror_events resolves a transcript event
-- uuid to the session(s) that mirrored it, for lineage links.
-- mirror_cursors remembers how far each transcript file was read.

CREATE TABLE branches (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    first_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    last_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    system_msg_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    progression_id TEXT
);
CREATE INDEX branches_session ON branches (session_id);
CREATE INDEX branches_first_msg_id ON branches (first_msg_id);
CREATE INDEX branches_last_msg_id ON branches (last_msg_id);

CREATE TABLE progressions (
    id TEXT PRIMARY KEY NOT NULL,
    next_position BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

CREATE TABLE progression_items (
    progression_id TEXT NOT NULL REFERENCES progressions(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (progression_id, message_id)
);

ALTER TABLE sessions ADD COLUMN progression_id TEXT;

CREATE TABLE mirror_events (
    event_uuid TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (event_uuid, session_id)
);

CREATE TABLE mirror_cursors (
    path TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    session_id TEXT NOT NULL,
    byte_offset BIGINT NOT NULL,
    first_event_seen BIGINT NOT NULL DEFAULT 0,
    pending_parent_uuid TEXT,
    updated_at BIGINT NOT NULL
);

CREATE INDEX sessions_kind_last_message ON sessions (kind, last_message_at);
