-- Schema version 10 (issue 33 item 6): the CPU plan an emulated link ran under (testbed/cpuplan.py):
-- 'two-core' (both engines and their verdicts on one CPU) or 'four-core' (timing core, a verdict core per
-- direction beside its iperf3 end, RPS core); the spec's [link] cpu_plan = "auto" resolved on the host.
-- NULL: a link recorded before version 10 (every one of them ran the two-core plan) or a remote path.

ALTER TABLE links ADD COLUMN IF NOT EXISTS cpu_plan                      VARCHAR;
