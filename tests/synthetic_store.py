"""Synthetic stores for the select and report tests, written through the Store API only."""

from __future__ import annotations

import itertools

import numpy as np

from tcpprofile.store import Store

RATE = 10e9


def add_link(store: Store, link_id: str, rtt_ms: float, *, campaign_id: str = "c1", kind: str = "emulated",
             rtt_measured_ms: float | None = None, rate_measured_bps: float | None = None,
             calibration_ok: bool = True, flags: str | None = None, host: str | None = None,
             loss_mode: str = "none", loss_rate: float = 0.0) -> None:
    store.insert_link({"link_id": link_id, "campaign_id": campaign_id, "kind": kind, "rate_bps": RATE,
                       "rtt_ms": rtt_ms, "buffer_bytes": 50_000_000, "loss_mode": loss_mode,
                       "loss_rate": loss_rate, "host": host,
                       "rtt_measured_ms": rtt_ms * 1.002 if rtt_measured_ms is None else rtt_measured_ms,
                       "rate_measured_bps": RATE * 0.99 if rate_measured_bps is None else rate_measured_bps,
                       "calibration_ok": calibration_ok, "flags": flags})


def add_run(store: Store, run_id: str, link_id: str, variant: str, streams: int, buffer, throughput: float,
            *, rep: int = 0, cc_impl: str = "builtin", intervals: list | None = None, cwnd: list | None = None,
            status: str = "ok", transfer_bytes: int | None = None, duration_s: float | None = 10.0,
            flags: str | None = None) -> None:
    store.put_run({"run_id": run_id, "campaign_id": "c1", "link_id": link_id, "variant": variant,
                   "cc_impl": cc_impl, "cc_kernel_name": variant, "streams": streams,
                   "socket_buffer_bytes": buffer, "transfer_bytes": transfer_bytes,
                   "duration_target_s": duration_s, "repetition": rep, "status": status,
                   "throughput_bps": throughput, "duration_s": duration_s, "flags": flags},
                  intervals=intervals or [], cwnd=cwnd or [])


def profile_value(variant: str, streams: int, buffer, rtt_ms: float) -> float:
    """A dual-regime profile: concave then convex, better with more streams and larger buffers."""
    quality = {"cubic": 1.0, "htcp": 1.05, "scalable": 0.95, "reno": 0.8, "bbr": 0.9}.get(variant, 1.0)
    reach = 60.0 * quality * (1 + 0.3 * (streams - 1)) * (1 if buffer is None else 1 + buffer / 5e8)
    return RATE * 0.94 / (1 + (rtt_ms / reach) ** 2.2)


def trace(rng: np.random.Generator, mean_bps: float, streams: int, seconds: int = 60) -> list[dict]:
    """Per-stream 1 s intervals plus their sum (stream None), with a slow-start ramp and jitter."""
    rows = []
    ramp = np.minimum(1.0, 2.0 ** (np.arange(seconds) - 3))
    for s in range(streams):
        share = mean_bps / streams * ramp * (1 + 0.15 * rng.standard_normal(seconds))
        for t, v in enumerate(np.maximum(share, 0.0)):
            rows.append({"stream": s, "start_s": float(t), "end_s": float(t + 1), "bytes": int(v / 8),
                         "bits_per_second": float(v)})
    for t in range(seconds):
        total = sum(r["bits_per_second"] for r in rows if r["start_s"] == t)
        rows.append({"stream": None, "start_s": float(t), "end_s": float(t + 1), "bytes": int(total / 8),
                     "bits_per_second": total})
    return rows


def build(store: Store, *, variants=("cubic", "htcp"), streams=(1, 4), buffers=(None,),
          rtts=(11.8, 45.6, 91.6, 183.0), reps: int = 5, seed: int = 1, noise: float = 0.03,
          with_intervals: bool = False, with_cwnd: bool = False) -> int:
    """Campaign c1 over one link per RTT; returns the number of ok runs written."""
    rng = np.random.default_rng(seed)
    store.insert_campaign({"campaign_id": "c1", "name": "synthetic", "mode": "emulated"})
    for rtt in rtts:
        add_link(store, f"L{rtt:g}", rtt)
    count = 0
    for v, n, b, rtt, rep in itertools.product(variants, streams, buffers, rtts, range(reps)):
        mean = profile_value(v, n, b, rtt)
        thr = float(mean * (1 + noise * rng.standard_normal()))
        iv = trace(rng, thr, n) if with_intervals and rep < 2 else None
        cw = None
        if with_cwnd and rep == 0:
            cw = [{"stream": 0, "t_s": t / 10, "snd_cwnd": int(100 + (t % 50) * 20), "ssthresh": 900,
                   "srtt_us": int(rtt * 1000)} for t in range(200)]
        add_run(store, f"{v}-{n}-{b}-{rtt:g}-{rep}", f"L{rtt:g}", v, n, b, thr, rep=rep,
                intervals=iv, cwnd=cw)
        count += 1
    return count


def build_flagged(s: Store) -> None:
    """Campaign c1 with two flagged runs (G = 1e9): cubic n=1 at 10 ms: 9.0, 9.1, 8.9 and a slow run
    flagged host_contended (3.0); htcp n=1: 8.5, 8.6, 8.4 and 8.5 on a link that missed calibration
    (rate_low). 30 ms: three clean runs each (cubic 5.0, 5.1, 5.2; htcp 4.0, 4.1, 4.2)."""
    G = 1e9
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    add_link(s, "L10", 10.0)
    add_link(s, "L10bad", 10.0, calibration_ok=False, flags="rate_low")
    add_link(s, "L30", 30.0)
    for i, x in enumerate((9.0, 9.1, 8.9)):
        add_run(s, f"cubic-10-{i}", "L10", "cubic", 1, None, x * G, rep=i)
    add_run(s, "cubic-10-slow", "L10", "cubic", 1, None, 3.0 * G, rep=3, flags="host_contended")
    for i, x in enumerate((8.5, 8.6, 8.4)):
        add_run(s, f"htcp-10-{i}", "L10", "htcp", 1, None, x * G, rep=i)
    add_run(s, "htcp-10-badlink", "L10bad", "htcp", 1, None, 8.5 * G, rep=3)
    for v, x in (("cubic", 5.0), ("htcp", 4.0)):
        for i in range(3):
            add_run(s, f"{v}-30-{i}", "L30", v, 1, None, (x + 0.1 * i) * G, rep=i)


def ensure_campaign(store: Store, campaign_id: str = "c1", name: str = "synthetic") -> None:
    if not store.con.execute("SELECT count(*) FROM campaigns WHERE campaign_id = ?", [campaign_id]).fetchall()[0][0]:
        store.insert_campaign({"campaign_id": campaign_id, "name": name, "mode": "emulated"})


def ensure_link(store: Store, rtt_ms: float, **kw) -> str:
    """The link L<rtt> (created once)."""
    link_id = f"L{rtt_ms:g}" + "".join(f"-{v}" for v in kw.values())
    if not store.con.execute("SELECT count(*) FROM links WHERE link_id = ?", [link_id]).fetchall()[0][0]:
        add_link(store, link_id, rtt_ms, **kw)
    return link_id


def add_profile(store: Store, value, *, variant: str = "cubic", streams: int = 1, buffer=None,
                rtts=(0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0), reps: int = 4, noise: float = 0.02, seed: int = 0,
                transfer_bytes: int | None = None, duration_s: float | None = 10.0, intervals=None) -> int:
    """One clean profile of campaign c1: value(rtt_ms) bit/s × (1 + noise·N(0, 1)) per run; fixed-size
    when transfer_bytes is given (the run's duration is then F·8/Θ); intervals(rng, thr, rtt, rep): its
    1 s trace rows (optional). Returns the runs written."""
    ensure_campaign(store)
    rng = np.random.default_rng(seed)
    count = 0
    for rtt, rep in itertools.product(rtts, range(reps)):
        thr = float(value(rtt) * (1 + noise * rng.standard_normal()))
        run_id = f"{variant}-{streams}-{buffer}-{transfer_bytes}-{duration_s}-{rtt:g}-{rep}"
        add_run(store, run_id, ensure_link(store, rtt), variant, streams, buffer, thr, rep=rep,
                transfer_bytes=transfer_bytes, duration_s=transfer_bytes * 8 / thr if transfer_bytes else duration_s,
                intervals=intervals(rng, thr, rtt, rep) if intervals else None)
        if transfer_bytes:   # size mode (-n): no duration target, as the executor records it
            store.con.execute("UPDATE runs SET duration_target_s = NULL WHERE run_id = ?", [run_id])
        count += 1
    return count


def logistic_trace(rng: np.random.Generator, r: float, mean_bps: float, seconds: int = 100) -> list[dict]:
    """Aggregate 1 s rows following the logistic map z ← r·z(1 − z) (Lyapunov exponent ln 2 at r = 4,
    ≈ 0.36 at r = 3.7, negative in the periodic windows) around mean_bps, after a 3 s ramp."""
    z, rows = rng.uniform(0.2, 0.8), []
    for t in range(seconds):
        z = r * z * (1 - z)
        v = mean_bps * (0.8 + 0.4 * z) * min(1.0, 2.0 ** (t - 3))
        rows.append({"stream": None, "start_s": float(t), "end_s": float(t + 1), "bytes": int(v / 8),
                     "bits_per_second": float(v)})
    return rows
