-- 0002_read_side (PostgreSQL): what the read-side tools (sessions ls/show/
-- messages, state health/stats/prune, monitor, lifecycle) need beyond the
-- recorder. messages gets a write-order cursor, as SQLite's rowid is: a
-- follower asks for the rows after the last seq it printed. Existing rows
-- are numbered when the column is added. The indexes serve the listings.

ALTER TABLE messages ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX messages_session_seq ON messages (session_id, seq);
CREATE INDEX sessions_created ON sessions (created_at);
CREATE INDEX sessions_invocation ON sessions (invocation_id) WHERE invocation_id IS NOT NULL;
