-- rssaudit history, schema version 3: each process's true peak RSS.

-- The running maximum of the exact RSS over the process's whole life (its
-- mm seen from creation), in pages, written when it ends: samples hold it
-- only at ticks, so a process that lived less than a sampling interval, or
-- peaked after its last tick, had no record of it. NULL: the process is
-- still running, its mm existed before the capture, or the row is older.
ALTER TABLE processes ADD COLUMN true_peak INTEGER;
