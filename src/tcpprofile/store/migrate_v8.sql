-- Schema version 8 (issue 33): the part of a run's stall excess the bottleneck's queue did not cover.
-- Per direction ("fwd": data, "rev": ACKs), from the delay engine's own record (native/delayd/delayd.c,
-- "Uncovered excess"): each episode adds max(0, excess - q/C), q/C the forward wire's busy time ahead
-- when it began. NULL from an engine built before version 8 (stall_effect_bound then uses the excess).

ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_uncovered_ms  DOUBLE;  -- summed uncovered excess (ms)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_uncovered_ms  DOUBLE;
