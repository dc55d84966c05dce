-- rssaudit history, schema version 2: model fidelity per sample interval,
-- and indexes that let ingest append instead of writing all over the file.

-- Model fidelity over the interval ending at this sample: update events at
-- which the upstream model's count was compared with the kernel's own
-- `count`, and how many were equal. Both NULL: not measured (every row
-- written before version 2, and mms not seen from their creation, whose
-- absolute values are unknown).
ALTER TABLE samples ADD COLUMN fidelity_checked INTEGER;
ALTER TABLE samples ADD COLUMN fidelity_matched INTEGER;

-- Per-process indexes take one insert per row at a different place for each
-- process (10 000 processes: ~10 000 index pages rewritten per flush, more
-- as the history grows), which capped ingest near 100 k rows/s. The time
-- indexes grow at their end only, and already hold process_id: a process's
-- rows are found by a range on time, bounded by the process's first and
-- last sight (processes.first_seen_ns, last_seen_ns), filtering process_id
-- inside the index.
DROP INDEX samples_by_process;
DROP INDEX model_errors_by_process;
DROP INDEX model_errors_by_time;
CREATE INDEX model_errors_by_time ON model_errors(end_ns, process_id);
