#!/usr/bin/env python3
"""Regenerate the pScheduler fixtures from the real iperf3 and iperf2 outputs in ../iperf3 and ../iperf2,
as pScheduler's tools turn them into a throughput result (no root, no network):

    .venv/bin/python tests/data/pscheduler/generate.py

- iperf3_result.json: ../iperf3/four_streams.json through the iperf3 tool's renaming
  (pscheduler-tool-iperf3/iperf3/iperf3_parser.py, parse_output/rename_json: socket → stream-id, bytes →
  throughput-bytes, bits_per_second → throughput-bits, snd_cwnd → tcp-window-size, rtt and mean_rtt →
  rtt; intervals[] from iperf3's intervals, summary.streams from end.streams[].sender, summary.summary
  from end.sum_sent), with receiver-throughput-bits = end.sum_received.bits_per_second (the result
  schema's receiver rate: pscheduler-test-throughput/throughput/validate.py, RESULT_SCHEMA).
- iperf3_run.json: ../iperf3/one_stream.json the same way, inside a run record (`start-time`, `state`,
  `result-merged`, `task` with `tool` and the throughput test's spec: source, dest, parallel,
  congestion, duration) as pScheduler's REST API returns a run; the hosts are RFC 2606 example names.
- iperf2_result.json: ../iperf2/pscheduler_p4.txt (iperf 2.1.8 run with the iperf2 tool's arguments)
  read by the iperf2 tool's rules (pscheduler-tool-iperf2/iperf2/iperf2_parser.py, parse_output): every
  `[id|SUM] a-b sec X [KMG]Bytes Y [KMG]bits/sec` line, grouped by its (a, b); SI prefixes as
  pscheduler.si_as_number reads them (K = 10³, so a MByte is 10⁶ bytes here); each group's
  summary its SUM line, or its one line; intervals sorted by start; `summary` the entries of the longest
  group (a list: the tool's run script returns it as it is), `diags` the command line and the output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
RENAME = {"socket": "stream-id", "start": "start", "end": "end", "bytes": "throughput-bytes",
          "bits_per_second": "throughput-bits", "omitted": "omitted", "retransmits": "retransmits",
          "snd_cwnd": "tcp-window-size", "rtt": "rtt", "mean_rtt": "rtt"}
SI = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
LINE = re.compile(r"\[\s*(\d+|SUM)\s*\]\s+([0-9.]+)\s*-\s*([0-9.]+)\s+sec\s+(\d+(?:\.\d+)?)\s+([PTGMK]?)Bytes\s+"
                  r"(\d+(?:\.\d+)?)\s+([PTGMK]?)bits/sec")


def renamed(obj: dict) -> dict:
    return {RENAME[k]: v for k, v in obj.items() if k in RENAME}


def iperf3_result(doc: dict) -> dict:
    end = doc["end"]
    summary = {**renamed(end["sum_sent"]), "receiver-throughput-bits": end["sum_received"]["bits_per_second"]}
    return {"schema": 1, "succeeded": True, "diags": "iperf3 -J output (left out of the fixture)",
            "intervals": [{"streams": [renamed(s) for s in it["streams"]], "summary": renamed(it["sum"])}
                          for it in doc["intervals"]],
            "summary": {"streams": [renamed(s["sender"]) for s in end["streams"]], "summary": summary}}


def iperf2_result(text: str, command: str) -> dict:
    groups: dict[tuple, list] = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            sid, a, b = m.group(1), float(m.group(2)), float(m.group(3))
            groups.setdefault((a, b), []).append({
                "stream-id": sid, "start": a, "end": b, "jitter": None, "lost": None, "sent": None,
                "throughput-bytes": float(m.group(4)) * SI[m.group(5)],
                "throughput-bits": float(m.group(6)) * SI[m.group(7)]})
    intervals = []
    for entries in groups.values():
        streams = [e for e in entries if e["stream-id"] != "SUM"]
        total = next((e for e in entries if e["stream-id"] == "SUM"), streams[0] if len(streams) == 1 else None)
        intervals.append({"streams": streams, "summary": total})
    intervals.sort(key=lambda it: it["summary"]["start"] if it["summary"] else it["streams"][0]["start"])
    longest = max(groups, key=lambda k: k[1] - k[0])
    return {"succeeded": True, "diags": f"{command}\n\n{text}\n", "intervals": intervals, "summary": groups[longest]}


def main() -> None:
    four = json.loads((HERE.parent / "iperf3" / "four_streams.json").read_text())
    (HERE / "iperf3_result.json").write_text(json.dumps(iperf3_result(four), indent=1) + "\n")
    one = json.loads((HERE.parent / "iperf3" / "one_stream.json").read_text())
    record = {
        "href": "https://dtn1.example.net/pscheduler/tasks/00000000-0000-0000-0000-000000000001/runs/"
                "00000000-0000-0000-0000-000000000002",
        "start-time": "2026-11-22T11:55:25+00:00", "end-time": "2026-11-22T11:55:40+00:00",
        "state": "finished", "state-display": "Finished",
        "task": {"schema": 1, "tool": "iperf3",
                 "test": {"type": "throughput", "spec": {"schema": 1, "source": "dtn1.example.net",
                                                         "dest": "dtn2.example.net", "parallel": 1,
                                                         "congestion": "cubic", "duration": "PT2S"}}},
        "result-merged": iperf3_result(one),
    }
    (HERE / "iperf3_run.json").write_text(json.dumps(record, indent=1) + "\n")
    text = (HERE.parent / "iperf2" / "pscheduler_p4.txt").read_text()
    result = iperf2_result(text, "iperf -p 5001 -c 127.0.0.1 -t 2 -m -i 1 -P 4")
    (HERE / "iperf2_result.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
