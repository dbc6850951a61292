"""SQL expressions over the store's tables that every reader shares (aliases: runs r, links l), so that
`analyze`, `select`, `model fit`, `report` and `reproduce` see the same runs with the same values."""

# τ of a run's link [ms]: the configured RTT (links.rtt_ms: emulated links, `import --rtt`), else the
# measured one (links.rtt_measured_ms: a remote link's TCP min_rtt; an imported file's smallest RTT, its
# link flagged rtt_measured_under_load unless that is iperf2's handshake RTT). NULL: the run has no τ, and no
# reader that needs one uses it.
TAU_MS_SQL = "coalesce(l.rtt_ms, l.rtt_measured_ms)"
# τ of a run's link [s]: TAU_MS_SQL in the code's unit (the store keeps ms; every reader returns seconds).
TAU_S_SQL = f"{TAU_MS_SQL} / 1e3"
