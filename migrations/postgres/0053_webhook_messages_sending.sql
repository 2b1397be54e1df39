-- Webhook delivery goes endpoint by endpoint: every pass asks which endpoints have an attempt in
-- flight (skipped, so that one hung receiver holds only itself) and which messages were left
-- 'sending' past the attempt's bound by a process that stopped (taken back). Both read only the
-- few rows in 'sending', which this index holds, instead of every message ever delivered.
CREATE INDEX webhook_messages_sending ON webhook_messages (endpoint_id, claimed_at) WHERE status = 'sending';
