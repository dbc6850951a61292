"""The contention check (issue 33, "Must show"): one campaign on a quiet host, then the same campaign with a
busy loop on every core. host_contended means something when no quiet run carries it and every busy run
does; a quiet run flagged otherwise is shown with what flagged it (engine_stall: its stall bound and its Θ
against the unflagged quiet runs' mean), so a flag that fires on a quiet host is judged by what it measured.

The campaign (benchmarks/data/contention-pair.toml): 10 Gbit/s per packet with the loss stage in place
(as the wire's acceptance campaign), β = BDP, CUBIC n = 1, 20 s, 45.6 and 183 ms, 2 repetitions: 4 runs a
phase, ~4 min in all. The busy loops are this script's children (foreign to the campaign's process tree),
killed in `finally`. Needs root; run it alone on a quiet host.

Usage: .venv/bin/python benchmarks/contention_pair.py [--out DIR] [--spec TOML]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tcpprofile.store.grouping import FLAGGED_SQL  # noqa: E402
from tcpprofile.store.db import Store  # noqa: E402

SPEC = ROOT / "benchmarks" / "data" / "contention-pair.toml"
SQL = f"""
SELECT l.rtt_ms, r.repetition, r.throughput_bps, coalesce(r.flags, '') AS flags, r.host_cpu_foreign,
       r.stall_effect_bound, {FLAGGED_SQL} AS flagged
FROM runs r JOIN links l USING (link_id) WHERE r.status = 'ok' ORDER BY r.seq
"""


def run_phase(spec: Path, db: Path, busy: bool) -> list[dict]:
    loops = []
    try:
        if busy:
            for _ in range(os.cpu_count() or 1):
                loops.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        r = subprocess.run([sys.executable, "-m", "tcpprofile.cli", "run", str(spec), "--db", str(db)],
                           capture_output=True, text=True)
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()
    if r.returncode not in (0, 1):         # 1: some run failed (shown below); 2+: it could not run
        raise SystemExit(f"tcpprofile run exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    with Store.open(db, read_only=True) as s:
        return s.query(SQL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="keep the two stores here (default: a temporary directory)")
    ap.add_argument("--spec", type=Path, default=SPEC)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("contention_pair: FAILED: needs root (network namespaces); nothing was measured", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tcpp-contention-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        phases = {}
        for name, busy in (("quiet", False), ("busy", True)):
            db = out / f"contention-{name}.duckdb"
            db.unlink(missing_ok=True)
            phases[name] = run_phase(args.spec, db, busy)
    for name, runs in phases.items():
        print(f"{name}:")
        for r in runs:
            bound = "-" if r["stall_effect_bound"] is None else f"{100 * r['stall_effect_bound']:.3f} %"
            print(f"  {r['rtt_ms']:g} ms rep {r['repetition']}: {r['throughput_bps'] / 1e9:.3f} Gbit/s, "
                  f"foreign {r['host_cpu_foreign']:.2f} cores, stall bound {bound}, "
                  f"{'FLAGGED' if r['flagged'] else 'clean'} {r['flags'] or '-'}")
    quiet, busy = phases["quiet"], phases["busy"]
    contended = lambda r: "host_contended" in r["flags"].split(",")    # noqa: E731
    q_contended, b_contended = sum(map(contended, quiet)), sum(map(contended, busy))
    clean = [r["throughput_bps"] for r in quiet if not r["flagged"]]
    others = [r for r in quiet if r["flagged"] and not contended(r)]
    ok = bool(quiet and busy) and q_contended == 0 and b_contended == len(busy)
    print(f"quiet: {q_contended} of {len(quiet)} host_contended, {len(others)} flagged otherwise; busy: "
          f"{b_contended} of {len(busy)} host_contended -> host_contended {'separates' if ok else 'does not separate'}")
    for r in others:
        rel = f"{100 * (r['throughput_bps'] / (sum(clean) / len(clean)) - 1):+.2f} %" if clean else "n/a"
        bound = "-" if r["stall_effect_bound"] is None else f"{100 * r['stall_effect_bound']:.3f} %"
        print(f"  quiet {r['rtt_ms']:g} ms rep {r['repetition']} flagged {r['flags']}: stall bound {bound}, "
              f"Θ {rel} against the unflagged quiet runs")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
