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


# -- "The papers side by side" (tests/test_report_papers.py) ------------------------------------------
PAPERS_RTTS = (0.4, 11.8, 45.6, 91.6, 183.0)
TEN_GB, HUNDRED_GB = 10 * 10**9, 100 * 10**9
STCP_DEFICIT = 0.02          # STCP's throughput is (1 − 0.02·(n − 1)) × CUBIC's and H-TCP's
BBR_SHARE = 0.9              # BBR at 0.9 × CUBIC in the fixed-size group
LOSS_RTTS = (0.4, 11.8, 45.6, 91.6, 183.0, 366.0)
BBR_AT_500 = (9.3e9, 2.0e9)  # the slides' BBR at 1 in 500: shortest and longest connection
TRACE_GROUP_S = 40.0


def _reps(store: Store, prefix: str, link_id: str, variant: str, n: int, buffer, mean: float, *, reps: int = 3,
          **kw) -> None:
    """reps runs whose mean is exactly `mean` (offsets ±0.5 % symmetric about it)."""
    offsets = np.linspace(-0.005, 0.005, reps) if reps > 1 else np.zeros(1)
    for rep, o in enumerate(offsets):
        add_run(store, f"{prefix}-{rep}", link_id, variant, n, buffer, float(mean * (1 + o)), rep=rep, **kw)


def papers_value(variant: str, n: int, rtt_ms: float) -> float:
    """Fixed-size profiles: n = 10 stays concave over the whole grid (τ_T censored at its end), n = 1 and 4
    turn convex; STCP falls behind CUBIC and H-TCP as n grows, BBR at 0.9 × CUBIC."""
    if n >= 10:
        base = RATE * (0.95 - 0.02 * rtt_ms / 183.0)
    else:
        base = profile_value("cubic", n, None, rtt_ms)
    share = {"scalable": 1 - STCP_DEFICIT * (n - 1), "bbr": BBR_SHARE}.get(variant, 1.0)
    return base * share


def smooth_trace(rng: np.random.Generator, mean_bps: float, wiggle: float, seconds: int) -> list[dict]:
    """An aggregate trace (stream None): a slow sine of relative amplitude 0.05 plus white noise of relative
    size `wiggle` — little noise gives successive differences of similar size (local exponents near 0)."""
    t = np.arange(seconds)
    v = mean_bps * (1 + 0.05 * np.sin(2 * np.pi * t / 17) + wiggle * rng.standard_normal(seconds))
    return [{"stream": None, "start_s": float(i), "end_s": float(i + 1), "bytes": int(x / 8),
             "bits_per_second": float(x)} for i, x in enumerate(np.maximum(v, 1.0))]


def build_papers(store: Store, seed: int = 4) -> None:
    """A store with the runs every figure of the report's "papers side by side" draws (campaign c1):
    - 10 GB transfers, B autotuned: CUBIC, H-TCP, STCP at n = 1, 4, 10 and BBR at n = 1 over PAPERS_RTTS
      (3 runs each; means exactly papers_value); 100 GB transfers of CUBIC at n = 1, 10 (Fig. 6);
    - 40 s runs with 1 s aggregate traces, B = 512 MiB: CUBIC and H-TCP at n = 1, 10 over 11.8, 91.6, 183 ms
      (2 traced runs each); traces noisier at 11.8 ms and with one stream (smooth_trace's wiggle);
    - 10 s runs, B = 512 MiB, n = 1, of BBR, CUBIC, H-TCP over LOSS_RTTS without loss, at periodic 1 in
      100,000 and 1 in 500 and uniform p = 0.002; BBR at 1 in 500 falls linearly in τ from 9.3 to 2 Gbit/s."""
    rng = np.random.default_rng(seed)
    store.insert_campaign({"campaign_id": "c1", "name": "papers", "mode": "emulated"})
    for rtt in sorted(set(PAPERS_RTTS) | set(LOSS_RTTS)):
        add_link(store, f"L{rtt:g}", rtt)
    for size in (TEN_GB, HUNDRED_GB):
        for v, ns in (("cubic", (1, 4, 10)), ("htcp", (1, 4, 10)), ("scalable", (1, 4, 10)), ("bbr", (1,))):
            if size == HUNDRED_GB and v != "cubic":
                continue
            for n in ns if size == TEN_GB else (1, 10):
                for rtt in PAPERS_RTTS:
                    mean = papers_value(v, n, rtt) * (1.02 if size == HUNDRED_GB else 1.0)
                    _reps(store, f"F{size}-{v}-{n}-{rtt:g}", f"L{rtt:g}", v, n, None, mean,
                          transfer_bytes=size, duration_s=None)
    big = 512 << 20
    for v in ("cubic", "htcp"):
        for n in (1, 10):
            for rtt in (11.8, 91.6, 183.0):
                wiggle = (0.2 if rtt < 20 else 0.002) * (1 if n == 1 else 0.5)
                for rep in range(2):
                    mean = papers_value("cubic", n, rtt)
                    add_run(store, f"T-{v}-{n}-{rtt:g}-{rep}", f"L{rtt:g}", v, n, big, mean, rep=rep,
                            duration_s=TRACE_GROUP_S,
                            intervals=smooth_trace(rng, mean, wiggle, int(TRACE_GROUP_S)))
    settings = (("none", 0.0), ("periodic", 1e-5), ("periodic", 2e-3), ("uniform", 2e-3))
    for mode, rate in settings:
        for rtt in LOSS_RTTS:
            lid = f"loss-{mode}-{rate:g}-{rtt:g}"
            if mode != "none":
                add_link(store, lid, rtt, loss_mode=mode, loss_rate=rate)
            for v in ("bbr", "cubic", "htcp"):
                if v == "bbr" and rate == 2e-3:
                    hi, lo = BBR_AT_500
                    mean = hi + (lo - hi) * (rtt - LOSS_RTTS[0]) / (LOSS_RTTS[-1] - LOSS_RTTS[0])
                else:
                    mean = RATE * 0.94 / (1 + (rtt / (60 if rate < 1e-3 else 10)) ** 2)
                _reps(store, f"{lid}-{v}", lid if mode != "none" else f"L{rtt:g}", v, 1, big, mean, reps=2)


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
