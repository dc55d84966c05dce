-- rssaudit history, schema version 6: runs.counting names how the audited
-- kernel counted RSS, which decides what its readers show.
-- 'percpu_counter' (Linux 6.2+): stat, VmHWM and ru_maxrss read the
-- central count; status and statm add every CPU's slot (precise).
-- 'task_cache' (before 6.2): atomics fed by per-task caches; every reader,
-- status and statm too, reads the atomics, so the exact value is the
-- update stream's (and a page-table walk's), and samples hold no precise
-- /proc value. Runs recorded before this version were all percpu_counter:
-- rssauditd refused older kernels then.
ALTER TABLE runs ADD COLUMN counting TEXT NOT NULL DEFAULT 'percpu_counter'
  CHECK (counting IN ('percpu_counter', 'task_cache'));
