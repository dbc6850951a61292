"""The configuration dimensions a profile can be grouped by, and which runs are flagged, as SQL over the
store's runs (r) and links (l). Apart from tcpprofile.analysis (numpy, scipy) so that the CLI can list
them at start-up and the campaign runner count flagged runs without loading it."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ValidationError

# The bottleneck buffer as the spec wrote it ("BDP" means a different byte count at every τ, and one
# profile); imported or older links without it fall back to the byte count.
BUFFER_SQL = "coalesce(l.buffer_spec, CAST(l.buffer_bytes AS VARCHAR))"

# Run flags that are notes, not reasons to leave a run out (the one list: every other flag is material, and
# --exclude-flagged honours it): how the 1 s traces were assembled (tcpprofile.measure.iperf.parse: they question no
# throughput, and a remote server without -J raises intervals_sender_bytes on every run), and a stall whose
# stall_effect_bound stays within the instrument's run-to-run resolution (fidelity.verdicts.stall_flag, issue 33).
NOTE_FLAGS = ("intervals_receiver_side", "intervals_sender_bytes", "streams_matched_by_order", "engine_stall_minor")

# A run is flagged (docs/analysis.md): its link missed calibration or carries flags, or the run carries a
# flag other than a note (fidelity: host_contended, rtt_base_off, engine_late, engine_dropped, loss_off;
# the link's calibration copied as link_*; throughput_sender_side, cc_mismatch, variant_unknown, and any
# flag added later). SQL over `runs r JOIN links l`; without a link row (LEFT JOIN) the run's flags decide.
# r.flags is comma-separated: each flag gets its own pair of commas, the notes are cut out, and anything
# left but commas is a flag (plain string functions: every DuckDB ≥ 1.0 has them).
_RUN_FLAGGED = (f"regexp_matches(regexp_replace(',' || replace(coalesce(r.flags, ''), ',', ',,') || ',', "
                f"',({'|'.join(NOTE_FLAGS)}),', '', 'g'), '[^,]')")
FLAGGED_SQL = (f"(coalesce(l.calibration_ok = false, false) OR coalesce(l.flags, '') <> '' "
               f"OR {_RUN_FLAGGED})")

# Configuration dimensions a profile can be grouped by; τ (links.rtt_ms) is the profile's axis.
DIMENSIONS = {
    "variant": "r.variant", "streams": "r.streams", "socket_buffer_bytes": "r.socket_buffer_bytes",
    "transfer_bytes": "r.transfer_bytes", "duration_target_s": "r.duration_target_s",
    "cc_impl": "r.cc_impl", "reverse": "r.reverse", "rate_bps": "l.rate_bps",
    "buffer": BUFFER_SQL, "buffer_bytes": "l.buffer_bytes", "loss_mode": "l.loss_mode", "loss_rate": "l.loss_rate",
    "link_kind": "l.kind", "mtu": "l.mtu",
}
DEFAULT_BY = ("variant", "streams", "socket_buffer_bytes", "transfer_bytes", "duration_target_s",
              "rate_bps", "buffer", "loss_mode", "loss_rate")


def check_by(by: Sequence[str]) -> tuple[str, ...]:
    by = tuple(by)
    unknown = [d for d in by if d not in DIMENSIONS]
    if unknown:
        raise ValidationError("by", f"unknown dimension(s) {', '.join(unknown)}; allowed: "
                              f"{', '.join(DIMENSIONS)}")
    return by
