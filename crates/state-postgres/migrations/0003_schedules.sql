-- Schedules that fire (scheduler crate), as on SQLite (its migration 0006):
-- the definition as JSON (trigger, runner request, missed-fire policy,
-- concurrency cap), a unique live name, the next due instant the tick loop
-- selects on, and on each run the instant it was due, when it was detected
-- (a missed fire is stamped at detection) and the session it started.
ALTER TABLE schedules ADD COLUMN name TEXT;
ALTER TABLE schedules ADD COLUMN spec_json TEXT;
ALTER TABLE schedules ADD COLUMN next_fire_at BIGINT;
ALTER TABLE schedules ADD COLUMN last_fire_at BIGINT;
CREATE UNIQUE INDEX schedules_name ON schedules (name) WHERE name IS NOT NULL;
CREATE INDEX schedules_due ON schedules (status, next_fire_at);

ALTER TABLE schedule_runs ADD COLUMN due_at BIGINT;
ALTER TABLE schedule_runs ADD COLUMN detected_at BIGINT;
ALTER TABLE schedule_runs ADD COLUMN session_id TEXT;
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, status);
