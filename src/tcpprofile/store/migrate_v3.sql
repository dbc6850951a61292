-- Schema version 3: why each configuration stopped (adaptive campaigns, `tcpprofile tune`).
-- One row per campaign and configuration, rewritten by the driver as decisions change.

CREATE TABLE IF NOT EXISTS stops (
    campaign_id          VARCHAR NOT NULL,
    config_key           VARCHAR NOT NULL,   -- sha256 of the configuration (link, V, n, B, F|D, direction), 16 hex
    link                 VARCHAR,            -- the link configuration in words
    variant              VARCHAR,
    streams              INTEGER,
    socket_buffer_bytes  BIGINT,             -- NULL: autotuning
    transfer_bytes       BIGINT,
    duration_target_s    DOUBLE,
    reverse              BOOLEAN,
    repetitions          INTEGER NOT NULL,   -- runs finished (ok and failed)
    ok_runs              INTEGER NOT NULL,
    mean_bps             DOUBLE,
    ci_low_bps           DOUBLE,             -- Student-t interval at the campaign's confidence
    ci_high_bps          DOUBLE,
    reason               VARCHAR NOT NULL,   -- adaptive: 'precision' | 'maximum' | 'open' (still running);
                                             -- tune: 'chosen' | 'tie' | 'dropped' | 'survivor'
    detail               VARCHAR,            -- in words, e.g. 'dropped after round 4: below cubic n=4 by > 1 %'
    PRIMARY KEY (campaign_id, config_key)
);
