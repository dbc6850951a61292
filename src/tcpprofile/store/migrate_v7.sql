-- Schema version 7 (issue 33): what a stall could cost a run. Additive: new nullable columns only.
-- Per direction ("fwd": data, "rev": ACKs), from the delay engine's own record (native/delayd/delayd.c,
-- "Stall episodes" and "Stall injection"); NULL from an engine built before version 7.

ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_episodes      BIGINT;  -- release batches that fell more
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_episodes      BIGINT;  -- than 0.5 ms behind
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_excess_ms     DOUBLE;  -- their summed excess: how long the wire
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_excess_ms     DOUBLE;  -- delivered nothing it should have (ms)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_injected_holds BIGINT; -- injected holds that deferred a release
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_injected_holds BIGINT; -- (0 when injection is off)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_inject_hold_ms DOUBLE; -- injection in force at the run's end:
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_inject_hold_ms DOUBLE; -- hold D (ms) ...
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_stall_inject_every_s DOUBLE; -- ... every P (s); NULL: off
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_stall_inject_every_s DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS stall_effect_bound             DOUBLE;  -- the largest relative change in the
                                                                                  -- throughput those stalls could have
                                                                                  -- caused (fidelity.verdicts.stall_effect_bound)

ALTER TABLE links ADD COLUMN IF NOT EXISTS stall_inject                  VARCHAR; -- injected stalls the link was set up
                                                                                  -- with, e.g. 'hold 10ms every 2s forward'
                                                                                  -- (spec [link] stall_inject); NULL: none
