-- rssaudit history, schema version 9: no history lost silently.

-- The run's heartbeat: the wall time of its last flush, written with the
-- rows of that flush. A run whose rssauditd was killed, crashed or lost its
-- host stopped after it, losing at most one flush interval of rows (and
-- each process's model-error interval still open). NULL: no flush yet, or a
-- run from before this version.
ALTER TABLE runs ADD COLUMN alive_ns INTEGER;

-- How the run ended: 'stopped' (its rssauditd ended it: SIGTERM, SIGINT,
-- --duration), 'died' (found unended by the next rssauditd to open the
-- database, which set ended_ns to its last heartbeat). NULL: running, or a
-- run from before this version.
ALTER TABLE runs ADD COLUMN end_reason TEXT
  CHECK (end_reason IN ('stopped', 'died'));

-- Time a run did not sample: a sampling tick came more than twice the
-- sample interval after the previous one (the daemon stopped by SIGSTOP,
-- or stalled). No process has a sample in (start_ns, end_ns).
CREATE TABLE sampling_gaps (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  start_ns INTEGER NOT NULL,  -- the last tick before the gap
  end_ns INTEGER NOT NULL     -- the first tick after it
);
CREATE INDEX sampling_gaps_by_time ON sampling_gaps(end_ns);
