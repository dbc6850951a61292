-- tcpprofile store, schema version 1.
-- Units: bits per second (_bps), bytes (_bytes), seconds (_s), milliseconds (_ms), microseconds (_us).
-- Configured values carry the plain name (rtt_ms, rate_bps); what was measured carries _measured.

CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER NOT NULL,
    applied_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One row per campaign spec (or per import batch). campaign_id is a hash of the normalised spec,
-- so running the same spec again finds its campaign and resumes it.
CREATE TABLE IF NOT EXISTS campaigns (
    campaign_id   VARCHAR PRIMARY KEY,
    name          VARCHAR NOT NULL,
    mode          VARCHAR NOT NULL,          -- 'emulated' | 'remote' | 'import'
    seed          BIGINT,                    -- order randomisation seed (null: spec order)
    spec_toml     VARCHAR,                   -- the spec as given
    spec_json     VARCHAR,                   -- the spec as validated and normalised
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One row per link set-up: configuration and its calibration.
CREATE TABLE IF NOT EXISTS links (
    link_id                VARCHAR PRIMARY KEY,
    campaign_id            VARCHAR NOT NULL,
    kind                   VARCHAR NOT NULL,  -- 'emulated' | 'remote' | 'unknown'
    rate_bps               DOUBLE,            -- configured bottleneck rate C
    rtt_ms                 DOUBLE,            -- configured RTT τ
    buffer_bytes           BIGINT,            -- configured drop-tail bottleneck buffer β
    buffer_spec            VARCHAR,           -- β as the spec wrote it ('BDP', '2xBDP', '50MB'): profiles
                                              -- over τ group by it (with 'BDP', β in bytes changes with τ)
    loss_mode              VARCHAR,           -- 'none' | 'periodic' | 'uniform'
    loss_rate              DOUBLE,            -- periodic: 1/N; uniform: p; none: 0
    mtu                    INTEGER,
    host                   VARCHAR,           -- remote mode: target host
    port                   INTEGER,           -- remote mode: iperf3 port
    rtt_measured_ms        DOUBLE,            -- idle RTT measured at set-up (ping -U)
    rtt_measured_mdev_ms   DOUBLE,
    rate_measured_bps      DOUBLE,            -- bottleneck rate measured at set-up
    goodput_ceiling_bps    DOUBLE,            -- TCP goodput the configured rate allows (framing, headers)
    calibration_ok         BOOLEAN,           -- false: the link missed its target (see flags)
    flags                  VARCHAR,           -- comma-separated, e.g. 'rtt_off,rate_low'
    calibration_json       VARCHAR,           -- everything the calibration measured
    created_at             TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One row per iperf3 run (one configuration × one repetition).
-- run_id is deterministic (campaign, configuration, repetition), which makes campaigns resumable.
CREATE TABLE IF NOT EXISTS runs (
    run_id                         VARCHAR PRIMARY KEY,
    campaign_id                    VARCHAR NOT NULL,
    link_id                        VARCHAR,
    seq                            INTEGER,   -- position in the campaign's (randomised) order
    variant                        VARCHAR,   -- usual name: cubic, htcp, scalable, ...
    cc_kernel_name                 VARCHAR,   -- what the socket used (e.g. tp_htcp)
    cc_impl                        VARCHAR,   -- 'builtin' | 'module' | 'bpf' | null (unknown)
    cc_object_sha256               VARCHAR,   -- BPF object hash when cc_impl = 'bpf'
    cc_reported                    VARCHAR,   -- what iperf3 reported the sender used
    streams                        INTEGER,   -- n parallel streams
    socket_buffer_bytes            BIGINT,    -- requested B (iperf3 -w); null: autotuning
    effective_socket_buffer_bytes  BIGINT,    -- what the kernel granted (it doubles and caps)
    transfer_bytes                 BIGINT,    -- requested F (iperf3 -n); null in duration mode
    duration_target_s              DOUBLE,    -- requested duration (iperf3 -t); null in size mode
    reverse                        BOOLEAN,   -- iperf3 -R
    repetition                     INTEGER,
    trace_cwnd                     BOOLEAN,
    -- results
    status                         VARCHAR NOT NULL,  -- 'ok' | 'failed' | 'running'
    failure_reason                 VARCHAR,
    attempts                       INTEGER NOT NULL DEFAULT 1,
    flags                          VARCHAR,   -- e.g. 'link_rtt_off' copied from the link
    throughput_bps                 DOUBLE,    -- receiver-side average over the whole transfer
    bytes_transferred              BIGINT,    -- receiver-side bytes
    duration_s                     DOUBLE,    -- measured transfer duration
    retransmits                    BIGINT,
    rtt_loaded_mean_ms             DOUBLE,    -- sender-side mean smoothed RTT under load (iperf3)
    rtt_loaded_min_ms              DOUBLE,
    -- host metadata
    kernel                         VARCHAR,
    iperf3_version                 VARCHAR,
    sysctls_json                   VARCHAR,
    started_at                     TIMESTAMP,
    finished_at                    TIMESTAMP,
    source_file                    VARCHAR,   -- importer: the file this run came from
    raw_json                       VARCHAR    -- iperf3 -J output as produced
);

-- iperf3 1 s intervals; stream is 0-based in the order iperf3 lists streams, NULL for the sum.
CREATE TABLE IF NOT EXISTS intervals (
    run_id           VARCHAR NOT NULL,
    stream           INTEGER,
    start_s          DOUBLE NOT NULL,
    end_s            DOUBLE NOT NULL,
    bytes            BIGINT,
    bits_per_second  DOUBLE,
    snd_cwnd_bytes   BIGINT,
    rtt_us           BIGINT,
    retransmits      BIGINT,
    omitted          BOOLEAN
);
CREATE INDEX IF NOT EXISTS intervals_run ON intervals (run_id);

-- Kernel tcp:tcp_probe samples (optional per run); stream as in intervals.
CREATE TABLE IF NOT EXISTS cwnd (
    run_id         VARCHAR NOT NULL,
    stream         INTEGER NOT NULL,
    t_s            DOUBLE NOT NULL,   -- since the run's start
    snd_cwnd       INTEGER,           -- packets
    ssthresh       BIGINT,            -- packets (tcp_current_ssthresh: at least 3/4 cwnd)
    srtt_us        BIGINT,
    snd_wnd        BIGINT,            -- bytes
    rcv_wnd        BIGINT,            -- bytes
    length         INTEGER            -- bytes of the ACKed segment the probe fired on
);
CREATE INDEX IF NOT EXISTS cwnd_run ON cwnd (run_id);
