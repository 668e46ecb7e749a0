-- 0009_history_rowid_terminal_index: two fewer b-tree writes per history
-- row. Every status change appends a `status_transitions` row; before this
-- migration that row also wrote the `sqlite_sequence` page (AUTOINCREMENT)
-- and an entry in `status_transitions_to_status (entity_type, to_status)`,
-- about 2.2 of the ~10 WAL pages of a dispatch enqueue.
--
-- 1. `id` stays the INTEGER PRIMARY KEY (the rowid) without AUTOINCREMENT:
--    a new row takes max(id) + 1, so ids keep counting up in commit order
--    (one writer at a time) as long as the highest id never goes away.
--    AUTOINCREMENT only added "an id is never reused even after the newest
--    row is deleted". Nothing deletes history (prune and purge keep it),
--    and that guarantee is now kept by the schema at no cost per insert:
--    the newest row cannot be deleted and no id can change (two triggers,
--    which run on DELETE / UPDATE OF id only), and the CHECK stops ids one
--    short of the largest rowid, past which SQLite would pick random free
--    ids (AUTOINCREMENT fails with SQLITE_FULL there instead).
-- 2. The `to_status` index becomes partial: it holds the terminal moves of
--    execution entities only, the rows `deliveries::undelivered` looks for.
--    The list below is the sorted union of the terminal statuses of the
--    `session`, `invocation`, `schedule_run` and `play` policies; that query
--    repeats it verbatim as a literal term so the planner can use the index
--    (a test checks the plan). A non-terminal move (a dispatch enqueue, a
--    claim) writes no entry.
--
-- The table is rebuilt with its ids: renamed aside, copied, dropped. With
-- foreign keys on, the rename points `transition_deliveries`' reference at
-- the old table, so that table is rebuilt too, keeping only rows whose
-- transition exists (a row for a missing transition could only have been
-- written with foreign keys off, and it could hide a new event given the
-- same id). All of it is this migration's one transaction.

ALTER TABLE status_transitions RENAME TO status_transitions_0008;
DROP INDEX status_transitions_entity;
DROP INDEX status_transitions_to_status;

CREATE TABLE status_transitions (
    id INTEGER PRIMARY KEY CHECK (id < 9223372036854775807),
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
INSERT INTO status_transitions (id, entity_type, entity_id, from_status, to_status,
        reason_code, reason_summary, reason_json, actor_type, actor_id, override_json,
        created_at)
    SELECT id, entity_type, entity_id, from_status, to_status, reason_code,
        reason_summary, reason_json, actor_type, actor_id, override_json, created_at
    FROM status_transitions_0008 ORDER BY id;
CREATE INDEX status_transitions_entity ON status_transitions (entity_type, entity_id, id);
CREATE INDEX status_transitions_terminal ON status_transitions (entity_type, to_status)
    WHERE to_status IN ('aborted', 'aborted_after_finish', 'blocked', 'cancelled',
        'completed', 'completed_empty', 'escalated', 'failed', 'gate_failed', 'merged',
        'skipped', 'timed_out');

CREATE TABLE transition_deliveries_0009 (
    consumer TEXT NOT NULL,
    transition_id INTEGER NOT NULL REFERENCES status_transitions(id),
    delivered_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, transition_id)
);
INSERT INTO transition_deliveries_0009 (consumer, transition_id, delivered_at)
    SELECT consumer, transition_id, delivered_at FROM transition_deliveries
    WHERE transition_id IN (SELECT id FROM status_transitions);
DROP TABLE transition_deliveries;
ALTER TABLE transition_deliveries_0009 RENAME TO transition_deliveries;
DROP TABLE status_transitions_0008;

CREATE TRIGGER status_transitions_newest_kept BEFORE DELETE ON status_transitions
    WHEN old.id >= (SELECT max(id) FROM status_transitions)
BEGIN
    SELECT RAISE(ABORT, 'the newest status_transitions row is never deleted: new ids count up from it');
END;
CREATE TRIGGER status_transitions_id_fixed BEFORE UPDATE OF id ON status_transitions
    WHEN new.id IS NOT old.id
BEGIN
    SELECT RAISE(ABORT, 'a status_transitions id never changes');
END;
