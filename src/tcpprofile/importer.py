"""Import existing iperf3 JSON files into the store (campaign mode 'import', link kind 'unknown').

The configuration is inferred from each file (congestion algorithm, streams, -w, -n or -t, reverse,
host and kernel, timestamps); `Overrides` supply what a file cannot say (the path's RTT, rate,
bottleneck buffer) or replace what it says. Files with the same inferred configuration are numbered
as repetitions 0, 1, … in timestamp order unless a repetition is given.

Every value read is checked once (iperf.parse → iperf_json.read): a file that is not a coherent
iperf3 result is rejected with a reason naming the JSON path (``end.sum_received.bits_per_second:
NaN is not a rate``). Each file is stored in its own transaction; a file the store refuses is rolled
back alone, and the store and the rest of the batch stay usable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from . import iperf
from .errors import TcpProfileError
from .store.db import Store, dumps

LOADED_RTT_NOTE = ("rtt_measured_ms is iperf3's mean smoothed RTT under load (sender side), "
                   "not an idle RTT: it includes queueing")


@dataclass(frozen=True)
class Overrides:
    variant: str | None = None
    rtt_s: float | None = None
    rate_bps: float | None = None
    buffer_bytes: int | None = None
    repetition: int | None = None


@dataclass
class FileResult:
    path: str
    run_id: str | None       # None: rejected
    reason: str | None       # why it was rejected
    summary: str = ""


def import_files(store: Store, paths: list[str | Path], overrides: Overrides = Overrides(),
                 name: str = "import") -> tuple[str, list[FileResult]]:
    """Store every valid file, each in its own transaction; return the campaign id and one result per
    file, in the given order. A rejected file (its reason in its result) leaves the store as it was."""
    parsed, results = [], []
    for p in paths:
        path = str(Path(p).resolve())
        run, data, reason = _read(p)
        results.append(FileResult(path, None, reason))
        if run is not None:
            parsed.append((len(results) - 1, path, hashlib.sha256(data).hexdigest(), data.decode(), run))

    campaign_id = "import-" + hashlib.sha256(
        json.dumps([sorted(d for _, _, d, _, _ in parsed), asdict(overrides)]).encode()).hexdigest()[:12]
    campaign = {"campaign_id": campaign_id, "name": name, "mode": "import",
                "spec_json": dumps({"files": [p for _, p, _, _, _ in parsed], "overrides": asdict(overrides)})}
    for (i, path, digest, raw, run), rep in zip(parsed, _repetitions(parsed, overrides)):
        run_id = hashlib.sha256(json.dumps([digest, asdict(overrides)]).encode()).hexdigest()[:20]
        try:
            with store.transaction():
                store.insert_campaign(campaign)      # with the batch's first stored file
                _store_one(store, campaign_id, run_id, path, raw, run, overrides, rep)
        except (TcpProfileError, duckdb.Error) as err:
            results[i].reason = f"not stored: {err}"
            continue
        r = run.run
        results[i].run_id = run_id
        results[i].summary = (f"{r['cc_reported'] if overrides.variant is None else overrides.variant} "
                              f"n={r['streams']} {r['throughput_bps'] / 1e9:.3f} Gbit/s")
    return campaign_id, results


def _read(p: str | Path) -> tuple[iperf.Parsed | None, bytes, str | None]:
    """(the checked parse, the file's bytes, None) or (None, b"", the reason it is rejected)."""
    try:
        data = Path(p).read_bytes()
    except OSError as err:
        return None, b"", f"cannot read: {err.strerror}"
    try:
        doc = json.loads(data)
    except UnicodeDecodeError:
        return None, b"", "not JSON: not UTF-8 text"
    except json.JSONDecodeError as err:
        return None, b"", (f"not JSON: {err.msg} (line {err.lineno}, column {err.colno}; truncated or not "
                           f"iperf3 -J output)")
    except (ValueError, RecursionError) as err:      # a number of > 4300 digits; nesting too deep
        return None, b"", f"not JSON that can be read: {str(err).splitlines()[0][:80]}"
    try:
        return iperf.parse(doc), data, None
    except iperf.IperfError as err:
        return None, b"", str(err)


def _config_key(run: iperf.Parsed, overrides: Overrides) -> str:
    r = run.run
    keys = ("streams", "socket_buffer_bytes", "transfer_bytes", "duration_target_s", "reverse", "kernel")
    return json.dumps([overrides.variant or r["cc_reported"], *(r[k] for k in keys)], default=str)


def _repetitions(parsed: list, overrides: Overrides) -> list[int]:
    """Repetition numbers: the override, or the rank among same-configuration files by start time."""
    if overrides.repetition is not None:
        return [overrides.repetition] * len(parsed)
    order = sorted(range(len(parsed)),
                   key=lambda k: (str(parsed[k][4].run["started_at"]), parsed[k][1]))
    counts: dict[str, int] = {}
    reps = [0] * len(parsed)
    for k in order:
        key = _config_key(parsed[k][4], overrides)
        reps[k] = counts.get(key, 0)
        counts[key] = reps[k] + 1
    return reps


def _store_one(store: Store, campaign_id: str, run_id: str, path: str, raw: str, run: iperf.Parsed,
               overrides: Overrides, repetition: int) -> None:
    r = run.run
    link_id = f"imp-{run_id}"
    flags = list(run.flags)
    rtt_measured = r["rtt_loaded_mean_ms"]
    link_flags = ["rtt_measured_under_load"] if rtt_measured is not None else []
    store.con.execute("DELETE FROM links WHERE link_id = ?", [link_id])
    store.insert_link({
        "link_id": link_id, "campaign_id": campaign_id, "kind": "unknown",
        "rate_bps": overrides.rate_bps,
        "rtt_ms": overrides.rtt_s * 1e3 if overrides.rtt_s is not None else None,
        "buffer_bytes": overrides.buffer_bytes,
        "rtt_measured_ms": rtt_measured,
        "flags": ",".join(link_flags) or None,
        "calibration_json": dumps({"source": "import", "note": LOADED_RTT_NOTE}),
    })
    variant = overrides.variant or r["cc_reported"]
    if variant is None:
        flags.append("variant_unknown")
    store.put_run({
        "run_id": run_id, "campaign_id": campaign_id, "link_id": link_id, "seq": None,
        "variant": variant, "cc_kernel_name": r["cc_reported"], "cc_reported": r["cc_reported"],
        "streams": r["streams"], "socket_buffer_bytes": r["socket_buffer_bytes"],
        "effective_socket_buffer_bytes": r["effective_socket_buffer_bytes"],
        "transfer_bytes": r["transfer_bytes"], "duration_target_s": r["duration_target_s"],
        "reverse": r["reverse"], "repetition": repetition, "trace_cwnd": False,
        "status": "ok", "attempts": 1, "flags": ",".join(flags) or None,
        "throughput_bps": r["throughput_bps"], "bytes_transferred": r["bytes_transferred"],
        "duration_s": r["duration_s"], "retransmits": r["retransmits"],
        "rtt_loaded_mean_ms": r["rtt_loaded_mean_ms"], "rtt_loaded_min_ms": r["rtt_loaded_min_ms"],
        "kernel": r["kernel"], "iperf3_version": r["iperf3_version"],
        "started_at": r["started_at"], "finished_at": r["finished_at"],
        "source_file": path, "raw_json": raw,
    }, intervals=run.intervals)
