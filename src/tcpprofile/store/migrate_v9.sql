-- Schema version 9 (issue 33 item 4): whether the run's sender wrote with iperf3 -Z (sendfile, no copy of the
-- data into the socket: the application core's cost per byte). NULL for runs stored before version 9 (no -Z).

ALTER TABLE runs ADD COLUMN IF NOT EXISTS zerocopy BOOLEAN;
