-- Schema version 5 (issue 19): a fixed-size transfer timed by its delivery. Additive: one nullable column.

ALTER TABLE runs ADD COLUMN IF NOT EXISTS size_delivered_s DOUBLE;  -- size mode: when the receiver had read
                                                                    -- transfer_bytes (s, its intervals' clock);
                                                                    -- throughput_bps = 8·transfer_bytes/this.
                                                                    -- NULL: iperf3's own rate (duration mode,
                                                                    -- runs before v5, size_undelivered)
