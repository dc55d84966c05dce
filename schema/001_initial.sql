-- rssaudit history, schema version 1.
-- Units: every time is wall-clock nanoseconds since the Unix epoch (*_ns);
-- every memory amount is in pages of the run's page_size unless named *_bytes.
-- Members follow mm->rss_stat: file, anon, swap, shmem. A NULL value is a
-- source that was not read, never a zero.

-- One rssauditd lifetime on one host.
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  host TEXT NOT NULL,
  kernel_release TEXT NOT NULL,
  nr_cpus INTEGER NOT NULL,
  batch INTEGER NOT NULL,       -- the kernel's percpu_counter batch for rss_stat
  page_size INTEGER NOT NULL,   -- bytes
  rssaudit_version TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  ended_ns INTEGER              -- NULL: running, or the daemon died
);

-- A process (one mm) is (pid, start_ticks), never a pid alone: pids are
-- reused. Rows belong to the run that saw them, as pid and start time are
-- unique within one boot only.
CREATE TABLE processes (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,   -- /proc/PID/stat field 22
  comm TEXT NOT NULL,
  cgroup TEXT NOT NULL,
  first_seen_ns INTEGER NOT NULL,
  last_seen_ns INTEGER NOT NULL,
  exit_ns INTEGER,
  exit_residue INTEGER            -- exact tracker at exit; non-zero: anomaly
);
CREATE INDEX processes_by_identity ON processes(pid, start_ticks);
CREATE INDEX processes_by_run ON processes(run_id);
CREATE INDEX processes_by_last_seen ON processes(last_seen_ns);

-- Every source of one process at one instant.
CREATE TABLE samples (
  process_id INTEGER NOT NULL REFERENCES processes(id),
  time_ns INTEGER NOT NULL,
  -- kernel approximate: mm->rss_stat[m].count read by BPF
  approx_file INTEGER, approx_anon INTEGER,
  approx_swap INTEGER, approx_shmem INTEGER,
  stat_rss INTEGER,               -- /proc/PID/stat field 24 (approximate)
  -- kernel precise: /proc/PID/status RssFile, RssAnon, VmSwap, RssShmem
  precise_file INTEGER, precise_anon INTEGER,
  precise_swap INTEGER, precise_shmem INTEGER,
  statm_resident INTEGER,         -- /proc/PID/statm field 2
  -- exact: the sum of the update stream seen by rssaudit
  exact_file INTEGER, exact_anon INTEGER,
  exact_swap INTEGER, exact_shmem INTEGER,
  -- page-table walk: smaps_rollup or a pagemap walk, when one was taken
  walk_file INTEGER, walk_anon INTEGER,
  walk_swap INTEGER, walk_shmem INTEGER,
  walk_rss INTEGER,
  vm_hwm INTEGER,                 -- /proc/PID/status VmHWM
  true_peak INTEGER,              -- running maximum of the exact RSS
  threads INTEGER,
  -- RSS drift, approximate - precise (file + anon + shmem, as VmRSS): from
  -- the BPF members when all were read, else from stat_rss; NULL without
  -- both. Written by rssauditd (rss_drift() in store/store_rows.h), not a
  -- generated column: SQLite would not read it from samples_by_time alone.
  drift INTEGER
);
CREATE INDEX samples_by_process ON samples(process_id, time_ns);
-- "Top drift in a window" reads this index alone: a range on time, then
-- drift and process per row, without touching the table.
CREATE INDEX samples_by_time ON samples(time_ns, drift, process_id);

-- Each counting scheme fed the process's update stream over one interval.
CREATE TABLE model_errors (
  process_id INTEGER NOT NULL REFERENCES processes(id),
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  scheme TEXT NOT NULL,           -- SchemeSet::kNames
  largest_error INTEGER NOT NULL, -- max |approximate - exact| of any member
  bound INTEGER,                  -- NULL: the scheme has no bound
  shared_updates INTEGER NOT NULL,
  bytes_per_mm INTEGER NOT NULL
);
CREATE INDEX model_errors_by_process ON model_errors(process_id, end_ns);
CREATE INDEX model_errors_by_time ON model_errors(end_ns);

CREATE TABLE anomalies (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  process_id INTEGER REFERENCES processes(id),  -- NULL: not one process's
  time_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX anomalies_by_time ON anomalies(time_ns);
CREATE INDEX anomalies_by_process ON anomalies(process_id);

-- What was lost since the previous row of the same run.
CREATE TABLE losses (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  time_ns INTEGER NOT NULL,
  ring_drops INTEGER NOT NULL,        -- ring-buffer records dropped
  unreadable_files INTEGER NOT NULL,  -- /proc files that could not be read
  ambiguous_events INTEGER NOT NULL,  -- events no mm could be assigned to
  store_dropped INTEGER NOT NULL      -- rows dropped while the disk failed
);
CREATE INDEX losses_by_time ON losses(time_ns);
