-- A maintenance run's note holds codes (`sessions:busy;codes:database_error:40001`), not the
-- English sentences earlier versions wrote. Every sentence those versions could write becomes its
-- code: whole phrases first, then the separators (": " after a sweep's name, "; " between parts).
UPDATE maintenance_runs
   SET note = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(note,
              'abandoned: the run stopped without finishing', 'abandoned'),
              'abandoned: its lease ran out', 'lease_ran_out'),
              'another run holds it', 'busy'),
              'stopped at the batch cap', 'batch_cap'),
              'stopped at the time cap', 'time_cap'),
              'lost its lease', 'lease_lost'),
              'database unavailable', 'database_unavailable'),
              'database error ', 'database_error:'),
              'database error', 'database_error'),
              'storage error', 'storage_error'),
              '; ', ';'),
              ': ', ':')
 WHERE note IS NOT NULL;
