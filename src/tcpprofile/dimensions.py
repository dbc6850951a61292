"""The configuration dimensions a profile can be grouped by, as columns of the store's runs (r) and
links (l). Apart from tcpprofile.analysis (numpy, scipy) so that the CLI can list them at start-up."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import ValidationError

# The bottleneck buffer as the spec wrote it ("BDP" means a different byte count at every τ, and one
# profile); imported or older links without it fall back to the byte count.
BUFFER_SQL = "coalesce(l.buffer_spec, CAST(l.buffer_bytes AS VARCHAR))"

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
