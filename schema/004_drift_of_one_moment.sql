-- rssaudit history, schema version 4: samples.drift compares values of one
-- moment (rss_drift() in store/store_rows.h). Before, a row whose capture
-- values were all known held the capture's count minus /proc's precise
-- value, read a drain apart: a process faulting in between showed MiB that
-- no counter held. Those rows get the drift rssauditd writes now: the
-- capture's count minus its exact sum, else stat_rss minus the precise
-- value, else unknown. Other rows already held stat_rss - precise.
UPDATE samples SET drift = CASE
    WHEN exact_file IS NOT NULL AND exact_anon IS NOT NULL
         AND exact_shmem IS NOT NULL
      THEN (approx_file + approx_anon + approx_shmem)
           - (exact_file + exact_anon + exact_shmem)
    WHEN stat_rss IS NOT NULL AND precise_file IS NOT NULL
         AND precise_anon IS NOT NULL AND precise_shmem IS NOT NULL
      THEN stat_rss - (precise_file + precise_anon + precise_shmem)
  END
  WHERE approx_file IS NOT NULL AND approx_anon IS NOT NULL
    AND approx_shmem IS NOT NULL;
