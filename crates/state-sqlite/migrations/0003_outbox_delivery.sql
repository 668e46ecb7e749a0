-- Delivery columns of the dispatch outbox (crates/outbox).
-- next_attempt_at keeps its meaning for pending rows (earliest next attempt)
-- and holds the claim's lease expiry while a row is delivering, so a claim
-- and its lease are one guarded write of the dispatch policy's patch fields.
ALTER TABLE dispatch_outbox ADD COLUMN deliver_to TEXT;
ALTER TABLE dispatch_outbox ADD COLUMN template_json TEXT;
ALTER TABLE dispatch_outbox ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 5
    CHECK (max_attempts >= 1);
ALTER TABLE dispatch_outbox ADD COLUMN ack_required INTEGER NOT NULL DEFAULT 0
    CHECK (ack_required IN (0, 1));
ALTER TABLE dispatch_outbox ADD COLUMN expires_at INTEGER;

CREATE INDEX dispatch_outbox_due ON dispatch_outbox (status, next_attempt_at);
CREATE INDEX dispatch_outbox_expiry ON dispatch_outbox (status, expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX dispatch_outbox_written ON dispatch_outbox (status, updated_at);
