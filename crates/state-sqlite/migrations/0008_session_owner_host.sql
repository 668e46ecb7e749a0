-- 0008_session_owner_host: the identity of the host a session's owner runs
-- on (its machine id and hostname), recorded beside owner_boot_id. A pid,
-- a start time or a boot id means something only on the host that recorded
-- it: a sweep judges a session only when its owner's host is this host. A
-- row from before this column (NULL) is judged as before on this
-- single-host file.

ALTER TABLE sessions ADD COLUMN owner_host_id TEXT;
