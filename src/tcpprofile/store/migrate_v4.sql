-- Schema version 4 (issue 21): the loss stage inside the delay engine, the worst case of release
-- lateness, and what limited each run. Additive: new nullable columns only.

ALTER TABLE runs ADD COLUMN IF NOT EXISTS loss_seed               BIGINT;   -- uniform loss: the engine's generator seed
                                                                            -- (from the run id; NULL: no uniform loss)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_late_p99_us  DOUBLE;   -- release lateness, 99th / 99.9th percentile
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_fwd_late_p999_us DOUBLE;   -- (upper edge of delayd's log-spaced bucket)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_late_p99_us  DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine_rev_late_p999_us DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS limited_by              VARCHAR;  -- 'network' | 'receive_window' | 'send_buffer' |
                                                                            -- 'application' (fidelity.connections.limited_by)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tcp_busy_ms             DOUBLE;   -- sender tcp_info chrono counters, summed over
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tcp_rwnd_limited_ms     DOUBLE;   -- the data connections (last sample of each)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tcp_sndbuf_limited_ms   DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS tcp_app_limited_share   DOUBLE;   -- share of connection samples marked app_limited
ALTER TABLE runs ADD COLUMN IF NOT EXISTS app_cpu_busy            DOUBLE;   -- busy share of the application CPUs (both ends)
