#!/usr/bin/env python3
"""Regenerate the iperf3 JSON fixtures: real iperf3 over loopback in a throwaway namespace (root).

    .venv/bin/python tests/data/iperf3/generate.py [NAME.json ...]   # all, or only the named ones

Writes one_stream.json, four_streams.json (with -w and --get-server-output), reverse.json (-R, two
streams, --get-server-output), size_mode.json (-n), omit.json (-O 1: omitted intervals, then the
clock starts again), bidir.json (--bidir, one stream each way), bidir_four.json (--bidir -P 4,
--get-server-output), refused.json (a closed port: iperf3's error object) and truncated.json
(one_stream.json cut in half).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from loopback import namespace, serving  # noqa: E402  (tests/data/loopback.py)

HERE = Path(__file__).resolve().parent
PORT = 5399

RUNS = {
    "one_stream.json": ["-t", "2", "-i", "0.5", "-C", "cubic"],
    "four_streams.json": ["-t", "2", "-i", "0.5", "-P", "4", "-w", "1M", "-C", "bbr", "--get-server-output"],
    "reverse.json": ["-t", "2", "-i", "0.5", "-P", "2", "-R", "-C", "cubic", "--get-server-output"],
    "size_mode.json": ["-n", "200M", "-b", "1G", "-i", "0.5", "-C", "reno"],
    "omit.json": ["-t", "2", "-i", "0.5", "-O", "1", "-P", "2", "-C", "cubic", "--get-server-output"],
    "bidir.json": ["-t", "2", "-i", "0.5", "--bidir", "-P", "1", "-C", "cubic"],
    "bidir_four.json": ["-t", "2", "-i", "0.5", "--bidir", "-P", "4", "-C", "cubic", "--get-server-output"],
}
DERIVED = ("refused.json", "truncated.json")


def main(names: list[str]) -> None:
    unknown = set(names) - set(RUNS) - set(DERIVED)
    if unknown:
        raise SystemExit(f"unknown fixtures {sorted(unknown)}; known: {', '.join([*RUNS, *DERIVED])}")
    names = names or [*RUNS, *DERIVED]
    with namespace("tcpp-gen") as ns:
        for name, args in RUNS.items():
            if name not in names:
                continue
            with serving(ns, ["iperf3", "-s", "-1", "-J", "-p", str(PORT)], PORT, stop=False):
                out = subprocess.run(["ip", "netns", "exec", ns, "iperf3", "-c", "127.0.0.1", "-p", str(PORT),
                                      "-J", *args], capture_output=True, text=True, timeout=60).stdout
                (HERE / name).write_text(out)
        if "refused.json" in names:
            out = subprocess.run(["ip", "netns", "exec", ns, "iperf3", "-c", "127.0.0.1", "-p", str(PORT + 1),
                                  "-t", "2", "-J"], capture_output=True, text=True, timeout=60).stdout
            (HERE / "refused.json").write_text(out)
        if "truncated.json" in names:
            text = (HERE / "one_stream.json").read_text()
            (HERE / "truncated.json").write_text(text[: len(text) // 2])

if __name__ == "__main__":
    main(sys.argv[1:])
