-- 0005_transcript_mirror: what the transcript mirror needs beyond the
-- session and message tables. A progression is the ordered, deduplicated
-- list of a branch's message ids: the primary key makes each id appear at
-- most once, position keeps the order, and next_position (read and bumped
-- inside the writer's IMMEDIATE transaction) hands out dense positions
-- without an index on them. mirror_events resolves a transcript
-- event uuid to the session(s) that mirrored it, for lineage links.
-- mirror_cursors remembers how far each transcript file was read, so a
-- re-run reads only what was appended.

CREATE TABLE progressions (
    id TEXT PRIMARY KEY NOT NULL,
    next_position INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE progression_items (
    progression_id TEXT NOT NULL REFERENCES progressions(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (progression_id, message_id)
) WITHOUT ROWID;

ALTER TABLE sessions ADD COLUMN progression_id TEXT;
ALTER TABLE branches ADD COLUMN progression_id TEXT;

CREATE TABLE mirror_events (
    event_uuid TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (event_uuid, session_id)
) WITHOUT ROWID;

CREATE TABLE mirror_cursors (
    path TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    session_id TEXT NOT NULL,
    byte_offset INTEGER NOT NULL,
    first_event_seen INTEGER NOT NULL DEFAULT 0,
    pending_parent_uuid TEXT,
    updated_at INTEGER NOT NULL
);

CREATE INDEX sessions_kind_last_message ON sessions (kind, last_message_at);
