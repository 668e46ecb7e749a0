-- 0005_session_owner_host (PostgreSQL): state-sqlite's 0008. The identity
-- of the host a session's owner runs on (machine id and hostname), beside
-- owner_boot_id. Several hosts share this database, so a sweep judges a
-- session only when its owner's host is its own; a row from before this
-- column (NULL) is never ended on a boot-id mismatch alone.

ALTER TABLE sessions ADD COLUMN owner_host_id TEXT;
