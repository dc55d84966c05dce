-- rssaudit history, schema version 7: what one read of the scheme's
-- counter costs its readers, in cache lines touched (ReadCost): the
-- approximate read (stat, VmHWM, ru_maxrss) and the precise one (status,
-- statm); NULL precise: the scheme has no precise reader. Rows from before
-- this version did not measure it and stay NULL (unknown, never 0).
ALTER TABLE model_errors ADD COLUMN read_lines_approximate INTEGER;
ALTER TABLE model_errors ADD COLUMN read_lines_precise INTEGER;
