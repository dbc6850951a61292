-- Schema version 2: what the instrument did during each run (issue: a faithful wire in every mode).
-- Applied on top of version 1 (new stores run schema_v1.sql, then every migrate_vN.sql in order).
-- Units as in schema_v1.sql; "fwd" is the data direction (delay engine in the receiver's namespace),
-- "rev" the ACK direction (engine in the sender's namespace).

ALTER TABLE links ADD COLUMN IF NOT EXISTS loss_calibrated_off  BOOLEAN;  -- rate/RTT measured with the loss stage off

ALTER TABLE runs ADD COLUMN IF NOT EXISTS rtt_base_ms            DOUBLE;   -- smallest RTT sample TCP saw under load
                                                                           -- (tcp_info min_rtt of the data connections)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS rtt_base_source        VARCHAR;  -- 'tcp_info min_rtt'
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_late_mean_us DOUBLE;  -- delay-engine release lateness, mean
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_late_max_us DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_late_mean_us DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_late_max_us DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_drops       BIGINT;   -- packets the engine path lost
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_drops       BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_cpu_share   DOUBLE;   -- CPU seconds / wall seconds (1 = a core)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_cpu_share   DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS bottleneck_drops       BIGINT;   -- the rate stage's drop-tail drops
ALTER TABLE runs ADD COLUMN IF NOT EXISTS bottleneck_overlimits  BIGINT;   -- packets that found the modelled wire busy (queued)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS loss_seen_packets      BIGINT;   -- packets the loss stage saw
ALTER TABLE runs ADD COLUMN IF NOT EXISTS loss_dropped_packets   BIGINT;   -- and dropped
ALTER TABLE runs ADD COLUMN IF NOT EXISTS inflight_end_packets   BIGINT;   -- held in the link when the run ended
ALTER TABLE runs ADD COLUMN IF NOT EXISTS host_cpu_busy          DOUBLE;   -- share of all cores busy during the run
ALTER TABLE runs ADD COLUMN IF NOT EXISTS host_cpu_foreign       DOUBLE;   -- cores used by other processes during the run
ALTER TABLE runs ADD COLUMN IF NOT EXISTS host_cpu_pressure      DOUBLE;   -- PSI cpu "some": stall time / wall time during the run
ALTER TABLE runs ADD COLUMN IF NOT EXISTS host_runqueue_max      DOUBLE;   -- runnable tasks (procs_running), max of samples
ALTER TABLE runs ADD COLUMN IF NOT EXISTS fidelity_json          VARCHAR;  -- everything sampled (src/tcpprofile/measure/fidelity/, docs/testbed.md)
