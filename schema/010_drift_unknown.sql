-- rssaudit history, schema version 10: samples.drift_unknown says why a
-- sample's drift is NULL although both of its sources were read
-- (DriftUnknown in store/store_rows.h): 'moving', stat's count moved
-- between the reads of stat and status (rssauditd reads stat again after
-- status); 'exiting', the process was exiting, its counters torn down
-- under the reads; 'beyond_bound', |drift| over the run's RSS bound, 3
-- counters of nr_cpus x (batch - 1) pages, which no drift of one moment
-- can exceed (a consistent read beyond it is an anomaly row too). NULL
-- with a NULL drift: a source was not read.
ALTER TABLE samples ADD COLUMN drift_unknown TEXT
  CHECK (drift_unknown IN ('moving', 'exiting', 'beyond_bound'));
-- Before this version a /proc pair was stored whatever moved between its
-- reads: a process faulting or exiting in between showed drifts of up to
-- 2x the bound. Those beyond their run's bound are no drift: NULL, and
-- why. A task_cache run has no bound and keeps its drifts.
UPDATE samples SET drift = NULL, drift_unknown = 'beyond_bound'
  WHERE drift IS NOT NULL
    AND abs(drift) > (
      SELECT 3 * r.nr_cpus * (r.batch - 1)
      FROM processes p JOIN runs r ON r.id = p.run_id
      WHERE p.id = samples.process_id AND r.counting = 'percpu_counter'
        AND r.nr_cpus BETWEEN 1 AND 4294967295
        AND r.batch BETWEEN 1 AND 2147483647);
