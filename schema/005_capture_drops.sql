-- rssaudit history, schema version 5: losses.ring_drops is capture_drops.
-- Records are no longer lost by a BPF ring buffer but refused by a full
-- per-CPU stream or never published (a sequence number skipped); the column
-- counts those, as it did the ring buffer's drops before.
ALTER TABLE losses RENAME COLUMN ring_drops TO capture_drops;
