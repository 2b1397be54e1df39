-- A share notification whose share can no longer be downloaded (revoked, expired, consumed,
-- purged or deleted) by the time it would be sent is not sent: the row becomes 'dropped', with
-- its body emptied like a sent one.
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_status_check;
ALTER TABLE mail_outbox ADD CONSTRAINT mail_outbox_status_check
    CHECK (status IN ('pending', 'sending', 'sent', 'dead', 'dropped'));
