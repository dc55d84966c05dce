-- rssaudit history, schema version 8: runs.status_precise, whether
-- /proc/PID/status (and statm) gave the precise RSS on the audited kernel,
-- as rssauditd measured it at start (sampler/reader_probe.h): 1 precise,
-- 0 approximate (before 6.2, and 6.2 to 6.15 without the stable backport
-- that made status sum the per-CPU slots), NULL not measured (runs from
-- before this version, or a probe that could not tell). Only a run with 1
-- holds precise values in its samples.
ALTER TABLE runs ADD COLUMN status_precise INTEGER
  CHECK (status_precise IN (0, 1));
