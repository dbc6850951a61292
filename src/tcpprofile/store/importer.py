"""Import existing throughput results into the store (campaign mode 'import', link kind 'unknown').

Formats (formats/: one reader each behind one interface, detected from the file's shape): iperf3 -J,
pScheduler throughput results (its iperf3 and iperf2 tools; bare or in the run record), iperf2 client
reports (plain, -e, -y C). A file no reader recognises is rejected as "not an iperf3 -J, pScheduler or
iperf2 result", naming what was looked for.

The configuration is inferred from each file (congestion algorithm, streams, -w, -n or -t, reverse,
host and kernel, timestamps, the host pair); `Overrides` supply what a file cannot say (the path's RTT,
rate, bottleneck buffer) or replace what it says. Files with the same inferred configuration are
numbered as repetitions 0, 1, … in timestamp order unless a repetition is given.

A given --rtt is compared with the smallest RTT the file holds (iperf3's min_rtt, iperf2 -e's irtt,
else the smallest smoothed RTT sampled at an interval's end: which one is said); beyond the tolerance
of same_rtt.py the file's result carries a warning. A loaded mean RTT includes queueing: it is never
the one compared.

A --bidir result holds two directions measured at once: each is stored as its own run, the
client-to-server one with reverse = false and the server-to-client one with reverse = true (as -R),
both flagged `bidir` (the other direction's data and ACKs shared the path: not a dedicated-connection
measurement) and stored together or not at all; the file's result line names both.

Every value read is checked once (by the format's reader): a file that is not a coherent result is
rejected with a reason naming the JSON path or line (``end.sum_received.bits_per_second: NaN is not a
rate``). Files are all read before the store is touched (`read_files`): the CLI creates no store when
none could be read. Each file is stored in its own transaction; a file the store refuses is rolled back
alone, and the store and the rest of the batch stay usable. A file whose content is already stored is
said to be so (`FileResult.already`): stored again under the same run id, it replaces that run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb

from . import formats
from ..measure import iperf
from ..errors import IperfError, TcpProfileError
from .formats.iperf3 import BIDIR_FLAG
from .db import Store, dumps
from ..same_rtt import rtt_tolerance_ms

LOADED_RTT_NOTE = ("rtt_measured_ms is the file's smallest RTT (iperf3's min_rtt: the smallest smoothed RTT "
                   "sampled under load; pScheduler's per-interval rtt; iperf2's handshake irtt), else the sender's "
                   "mean smoothed RTT under load: a base RTT like the profiles' τ where the file has one")
HANDSHAKE_RTT = "iperf2 irtt, the handshake's RTT"     # formats/iperf2_*: measured before any data: no queueing


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
    run_id: str | None       # None: rejected; of a --bidir file, the client-to-server run
    reason: str | None       # why it was rejected
    summary: str = ""        # what was stored, in words
    run_ids: tuple[str, ...] = ()   # every run stored from the file (two of a --bidir file)
    format: str | None = None       # the reader's name: 'iperf3 -J', 'pScheduler throughput', 'iperf2', …
    warnings: list[str] = field(default_factory=list)   # stored, but something disagrees (a given --rtt)
    already: tuple[str, ...] = ()   # runs that held this file's content before this import
    about: str = ""                 # the file's path and RTT, in words: ', 10.0.0.1 -> 10.0.0.2, RTT 0.83 ms (…)'


@dataclass
class ReadFile:
    """One file as read, before the store is touched: its parsed runs or why it is rejected."""
    path: str
    runs: list[iperf.Parsed]
    raw: str = ""
    digest: str = ""
    reason: str | None = None
    format: str | None = None


def read_files(paths: list[str | Path]) -> list[ReadFile]:
    """Read and check every file (no store needed): the CLI opens the store only if one can be stored."""
    out = []
    for p in paths:
        path = str(Path(p).resolve())
        try:
            data = Path(p).read_bytes()
        except OSError as err:
            out.append(ReadFile(path, [], reason=f"cannot read: {err.strerror}"))
            continue
        try:
            reader, runs = formats.read(data)
        except IperfError as err:
            out.append(ReadFile(path, [], reason=str(err)))
            continue
        out.append(ReadFile(path, runs, data.decode(), hashlib.sha256(data).hexdigest(), format=reader.name))
    return out


def import_files(store: Store, paths: list[str | Path], overrides: Overrides = Overrides(),
                 name: str = "import") -> tuple[str, list[FileResult]]:
    """Store every valid file, each in its own transaction; return the campaign id and one result per
    file, in the given order. A rejected file (its reason in its result) leaves the store as it was."""
    return store_files(store, read_files(paths), overrides, name)


def store_files(store: Store, read: list[ReadFile], overrides: Overrides = Overrides(),
                name: str = "import") -> tuple[str, list[FileResult]]:
    """Store the files read_files() read (see import_files)."""
    parsed, results = [], []      # parsed: one entry per direction of a file
    for i, f in enumerate(read):
        results.append(FileResult(f.path, None, f.reason, format=f.format,
                                  warnings=_rtt_warnings(f.runs, overrides), about=_about(f.runs)))
        parsed.extend((i, f.path, f.digest, f.raw, run) for run in f.runs)

    campaign_id = "import-" + hashlib.sha256(
        json.dumps([sorted(d for _, _, d, _, _ in parsed), asdict(overrides)]).encode()).hexdigest()[:12]
    campaign = {"campaign_id": campaign_id, "name": name, "mode": "import",
                "spec_json": dumps({"files": [p for _, p, _, _, _ in parsed], "overrides": asdict(overrides)})}
    by_file: dict[int, list] = {}
    for entry, rep in zip(parsed, _repetitions(parsed, overrides)):
        by_file.setdefault(entry[0], []).append((entry, rep))
    for i, entries in by_file.items():
        stored = []
        try:
            with store.transaction():                # a file's runs: all stored, or none
                store.insert_campaign(campaign)      # with the batch's first stored file
                already = tuple(r[0] for r in store.con.execute(
                    "SELECT run_id FROM runs WHERE raw_json = ? ORDER BY run_id", [entries[0][0][3]]).fetchall())
                for (_, path, digest, raw, run), rep in entries:
                    bidir = BIDIR_FLAG in run.flags
                    key = [digest, asdict(overrides)] + (["reverse"] if bidir and run.run["reverse"] else [])
                    run_id = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]
                    _store_one(store, campaign_id, run_id, path, raw, run, overrides, rep, read[i].format)
                    stored.append((run_id, run))
        except (TcpProfileError, duckdb.Error) as err:
            results[i].reason = f"not stored: {err}"
            continue
        results[i].already = already
        results[i].run_ids = tuple(run_id for run_id, _ in stored)
        results[i].run_id = results[i].run_ids[0]
        results[i].summary = "; ".join(_summary(run, overrides, run_id if len(stored) > 1 else None)
                                       for run_id, run in stored)
    return campaign_id, results


def _rtt_warnings(runs: list[iperf.Parsed], overrides: Overrides) -> list[str]:
    """A given --rtt against the smallest RTT the file holds: a warning beyond max(1 %, 0.1 ms)
    (same_rtt.py). The loaded mean RTT includes queueing and is never compared."""
    if overrides.rtt_s is None:
        return []
    given = overrides.rtt_s * 1e3
    out = []
    for run in runs:
        low, what = run.run.get("rtt_file_min_ms"), run.run.get("rtt_file_min_what")
        if low is not None and abs(low - given) > rtt_tolerance_ms(given):
            text = (f"--rtt {given:.3f} ms disagrees with the file's RTT {low:.3f} ms ({what}) by more than "
                    f"max(1 %, 0.1 ms)")
            if text not in out:
                out.append(text)
    return out


def _about(runs: list[iperf.Parsed]) -> str:
    """The host pair and the file's smallest RTT, where it says them (the first direction's)."""
    if not runs:
        return ""
    r = runs[0].run
    hosts = (r.get("source_host"), r.get("dest_host"))
    text = f", {hosts[0] or '?'} -> {hosts[1] or '?'}" if any(hosts) else ""
    if r.get("rtt_file_min_ms") is not None:
        text += f", RTT {r['rtt_file_min_ms']:.3f} ms ({r['rtt_file_min_what']})"
    return text


def _summary(run: iperf.Parsed, overrides: Overrides, run_id: str | None) -> str:
    """What one stored run is, in words: 'cubic n=1 18.410 Gbit/s'; of a --bidir file, with its
    direction and run id."""
    r = run.run
    text = (f"{overrides.variant or r['cc_reported'] or 'variant unknown'} "
            f"n={r['streams']} {r['throughput_bps'] / 1e9:.3f} Gbit/s")
    if BIDIR_FLAG not in run.flags:
        return text
    direction = "reverse (server to client, stored as -R)" if r["reverse"] else "forward (client to server)"
    return f"--bidir {direction}: {text}, run {run_id}"


def _config_key(run: iperf.Parsed, overrides: Overrides) -> str:
    r = run.run
    keys = ("streams", "socket_buffer_bytes", "transfer_bytes", "duration_target_s", "reverse", "kernel")
    return json.dumps([overrides.variant or r["cc_reported"], *(r[k] for k in keys), BIDIR_FLAG in run.flags],
                      default=str)


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
               overrides: Overrides, repetition: int, fmt: str | None) -> None:
    r = run.run
    link_id = f"imp-{run_id}"
    flags = list(run.flags)
    # τ when no --rtt is given: the file's smallest RTT (closest to the path's base RTT), else its loaded mean
    rtt_measured = r.get("rtt_file_min_ms") or r["rtt_loaded_mean_ms"]
    idle = r.get("rtt_file_min_ms") is not None and r.get("rtt_file_min_what") == HANDSHAKE_RTT
    link_flags = ["rtt_measured_under_load"] if rtt_measured is not None and not idle else []
    store.con.execute("DELETE FROM links WHERE link_id = ?", [link_id])
    store.insert_link({
        "link_id": link_id, "campaign_id": campaign_id, "kind": "unknown",
        "rate_bps": overrides.rate_bps,
        "rtt_ms": overrides.rtt_s * 1e3 if overrides.rtt_s is not None else None,
        "buffer_bytes": overrides.buffer_bytes,
        "rtt_measured_ms": rtt_measured,
        "host": r.get("dest_host"), "source_host": r.get("source_host"),   # the path: client -> server
        "flags": ",".join(link_flags) or None,
        "calibration_json": dumps({"source": "import", "format": fmt, "note": LOADED_RTT_NOTE,
                                   "rtt_file_min_ms": r.get("rtt_file_min_ms"),
                                   "rtt_file_min_what": r.get("rtt_file_min_what")}),
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
        "throughput_bps": r["throughput_bps"], "size_delivered_s": r["size_delivered_s"],
        "bytes_transferred": r["bytes_transferred"],
        "duration_s": r["duration_s"], "retransmits": r["retransmits"],
        "rtt_loaded_mean_ms": r["rtt_loaded_mean_ms"], "rtt_loaded_min_ms": r["rtt_loaded_min_ms"],
        "kernel": r["kernel"], "iperf3_version": r["iperf3_version"],
        "started_at": r["started_at"], "finished_at": r["finished_at"],
        "source_file": path, "raw_json": raw,
    }, intervals=run.intervals)
