-- 0002_session_owner_and_spawn: who supervises a session (the owner: pid,
-- kernel start time in clock ticks since boot, boot id) and its leg's spawn
-- record (leader pid, process group, start time). A sweep ends a session
-- whose owner is provably gone; the leg's group is signalled only when a
-- live read of leg_pid gives leg_create_time back.

ALTER TABLE sessions ADD COLUMN owner_pid INTEGER;
ALTER TABLE sessions ADD COLUMN owner_start_time INTEGER;
ALTER TABLE sessions ADD COLUMN owner_boot_id TEXT;
ALTER TABLE sessions ADD COLUMN leg_pid INTEGER;
ALTER TABLE sessions ADD COLUMN leg_pgid INTEGER;
ALTER TABLE sessions ADD COLUMN leg_create_time INTEGER;
CREATE INDEX sessions_status ON sessions (status);
