#!/usr/bin/env python3
"""Regenerate the iperf2 client-report fixtures: real iperf2 (2.1.8) over loopback in a throwaway
namespace (RTTs of tens of µs).

    .venv/bin/python tests/data/iperf2/generate.py [NAME ...]   # all, or only the named ones (root)

Writes plain.txt (iperf -c … -t 2 -i 0.5), enhanced.txt (-e), p4.txt (-e -P 4 -w 1M: four streams
and their [SUM] lines), csv.csv (-y C) and csv_p4.csv (-y C -e -P 4: iperf 2.1.8 writes the plain
fields with -e too, its times to the ms, and no sum line), pscheduler_p4.txt (-t 2 -m -i 1 -P 4, the
arguments pScheduler's iperf2 tool gives; tests/data/pscheduler/generate.py reads it). The formats are
documented in src/tcpprofile/formats/iperf2_text.py and iperf2_csv.py (iperf2's src/Locale.c).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from loopback import namespace, serving  # noqa: E402  (tests/data/loopback.py)

HERE = Path(__file__).resolve().parent
PORT = 5398

RUNS = {
    "plain.txt": ["-t", "2", "-i", "0.5"],
    "enhanced.txt": ["-e", "-t", "2", "-i", "0.5", "-Z", "cubic"],
    "p4.txt": ["-e", "-t", "2", "-i", "0.5", "-P", "4", "-w", "1M", "-Z", "cubic"],
    "csv.csv": ["-y", "C", "-t", "2", "-i", "0.5"],
    "csv_p4.csv": ["-y", "C", "-e", "-t", "2", "-i", "0.5", "-P", "4"],
    # as pScheduler's iperf2 tool runs it (pscheduler-tool-iperf2/iperf2/run: -t, -m, -i in whole s, -P)
    "pscheduler_p4.txt": ["-t", "2", "-m", "-i", "1", "-P", "4"],
}


def main(names: list[str]) -> None:
    unknown = set(names) - set(RUNS)
    if unknown:
        raise SystemExit(f"unknown fixtures {sorted(unknown)}; known: {', '.join(RUNS)}")
    with namespace("tcpp-gen2") as ns:
        for name, args in RUNS.items():
            if names and name not in names:
                continue
            with serving(ns, ["iperf", "-s", "-p", str(PORT)], PORT, stop=True):    # iperf2 has no -1
                out = subprocess.run(["ip", "netns", "exec", ns, "iperf", "-c", "127.0.0.1", "-p", str(PORT),
                                      *args], capture_output=True, text=True, timeout=60).stdout
                (HERE / name).write_text(out)

if __name__ == "__main__":
    main(sys.argv[1:])
