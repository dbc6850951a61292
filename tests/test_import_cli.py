"""`tcpprofile import` as the operator meets it: the exact command, the lines it
prints and its exit status. Only the CLI is used, so each test runs against any version of the code."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tcpprofile.cli import main as cli

DATA = Path(__file__).resolve().parent / "data"
ONE = DATA / "iperf3" / "one_stream.json"
NOT_RECOGNISED = "not an iperf3 -J, pScheduler or iperf2 result"


def runs_in(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def test_a_reimported_file_is_said_to_be_already_stored(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    outs = []
    for _ in range(3):
        assert cli(["import", str(ONE), "--db", str(db)]) == 0
        outs.append(capsys.readouterr().out)
    assert "already" not in outs[0] and "1 stored, 0 rejected;" in outs[0]
    run_id = outs[0].split("(run ")[1].split(")")[0]
    for out in outs[1:]:
        assert f"(run {run_id}; already stored: replaced, not added)" in out
        assert "1 stored (1 already stored), 0 rejected;" in out
    assert runs_in(db) == 1
    # the same file under other overrides is a second run: said so, naming the first
    assert cli(["import", str(ONE), "--db", str(db), "--rate", "10Gbit"]) == 0
    assert f"already stored as run {run_id} (other overrides): stored again as " in capsys.readouterr().out


def test_a_partly_rejected_batch_exits_non_zero_with_the_count(tmp_path, capsys):
    (tmp_path / "foo.json").write_text('{"foo": 1}')
    good = [DATA / "iperf3" / n for n in ("one_stream.json", "four_streams.json", "reverse.json", "size_mode.json",
                                          "omit.json")]
    bad = [DATA / "iperf3" / "refused.json", DATA / "iperf3" / "truncated.json", tmp_path / "missing.json",
           tmp_path / "foo.json"]
    db = tmp_path / "s.duckdb"
    assert cli(["import", *map(str, good + bad), "--db", str(db)]) == 1
    out = capsys.readouterr()
    assert "5 stored, 4 rejected;" in out.out
    assert out.err.strip() == "tcpprofile import: 4 of 9 files rejected"
    assert runs_in(db) == 5


def test_nothing_readable_creates_no_store(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    for target, reason in ((tmp_path / "missing.json", "No such file or directory"), (tmp_path, "Is a directory")):
        assert cli(["import", str(target), "--db", str(db)]) == 1
        assert not db.exists()
        out = capsys.readouterr()
        assert f"rejected {target}: cannot read: {reason}" in out.out
        assert f"0 stored, 1 rejected; nothing written to {db}" in out.out
        assert "no file could be imported (1 of 1 files rejected)" in out.err


def test_a_json_object_that_is_no_result_is_not_called_unfinished_iperf3(tmp_path, capsys):
    (tmp_path / "foo.json").write_text('{"foo": 1}')
    assert cli(["import", str(tmp_path / "foo.json"), "--db", str(tmp_path / "s.duckdb")]) == 1
    out = capsys.readouterr().out
    assert f"rejected {tmp_path / 'foo.json'}: {NOT_RECOGNISED}: JSON, but not an object with intervals/summary" in out
    assert "iperf3 did not finish" not in out


def test_a_given_rtt_is_checked_against_the_files_smallest(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    min_rtt = min(s["sender"]["min_rtt"] for s in json.loads(ONE.read_text())["end"]["streams"]) / 1e3   # 0.024 ms
    assert cli(["import", str(ONE), "--db", db, "--rtt", "45.6ms"]) == 0
    out = capsys.readouterr().out
    assert (f"warning  {ONE}: --rtt 45.600 ms disagrees with the file's RTT {min_rtt:.3f} ms (iperf3 min_rtt) "
            f"by more than max(1 %, 0.1 ms)") in out
    # within the 0.1 ms floor of same_rtt.py: one RTT, no warning
    assert cli(["import", str(ONE), "--db", db, "--rtt", f"{min_rtt + 0.09:.3f}ms"]) == 0
    assert "warning" not in capsys.readouterr().out
    enhanced = DATA / "iperf2" / "enhanced.txt"         # irtt=30 µs on its connection line
    assert cli(["import", str(enhanced), "--db", db, "--rtt", "45.6ms"]) == 0
    assert (f"warning  {enhanced}: --rtt 45.600 ms disagrees with the file's RTT 0.030 ms (iperf2 irtt, the "
            f"handshake's RTT)") in capsys.readouterr().out


def test_every_format_imports_as_one_run(tmp_path, capsys):
    files = {"pscheduler/iperf3_result.json": ("pScheduler throughput", 4),
             "pscheduler/iperf3_run.json": ("pScheduler throughput", 1),
             "pscheduler/iperf2_result.json": ("pScheduler throughput", 4),
             "iperf2/plain.txt": ("iperf2", 1), "iperf2/enhanced.txt": ("iperf2", 1), "iperf2/p4.txt": ("iperf2", 4),
             "iperf2/csv.csv": ("iperf2 -y C", 1), "iperf2/csv_p4.csv": ("iperf2 -y C", 4),
             "iperf2/pscheduler_p4.txt": ("iperf2", 4)}
    db = tmp_path / "s.duckdb"
    assert cli(["import", *(str(DATA / f) for f in files), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"{len(files)} stored, 0 rejected;" in out
    for f, (fmt, n) in files.items():
        line = next(x for x in out.splitlines() if x.startswith(f"stored   {DATA / f}: "))
        assert f": {fmt}: " in line and f" n={n} " in line, line
    assert runs_in(db) == len(files)
    # the path (the operator's unit of comparison) and the file's own smallest RTT, where it says them
    record = next(x for x in out.splitlines() if "iperf3_run.json" in x)
    assert (": cubic n=1 66.586 Gbit/s, dtn1.example.net -> dtn2.example.net, RTT 0.024 ms (the smallest "
            "smoothed RTT sampled at an interval's end) (run ") in record
