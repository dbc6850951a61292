"""The CLI entry point: every registered command is reachable and a closed pipe ends quietly."""

import json
import subprocess
import sys

from tcpprofile.cli import build_parser
from tcpprofile.commands import COMMANDS


def test_every_registered_command_has_a_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(COMMANDS)


def test_closed_pipe_exits_quietly(tmp_path):
    # `tcpprofile model ... | head -c1`: the reader leaves early; no traceback on stderr.
    cmd = [sys.executable, "-m", "tcpprofile.cli", "model", "--variant", "cubic", "--capacity", "10Gbit",
           "--rtt", *[f"{r}ms" for r in range(1, 300)], "--buffer", "50MB", "--size", "20GB", "--json"]
    # ~170 KB of output: more than a pipe holds, so the writer does meet the closed pipe.
    producer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = producer.stdout.read(1)
    producer.stdout.close()
    err = producer.stderr.read().decode()
    status = producer.wait(timeout=60)
    assert first == b"{"                  # the JSON document had begun
    assert status == 141                  # 128 + SIGPIPE: it met the closed pipe and said so by its status
    assert err == ""                      # and nothing on stderr: no traceback, no message


def test_a_named_command_imports_only_its_own_module():
    """`tcpprofile select …` registers select alone (the campaign runner and the models stay unimported:
    a second of start-up on a loaded 2-core host); without a command, or with an unknown one, all are."""
    code = ("import json, sys; from tcpprofile.cli import build_parser; "
            "sub = next(a for a in build_parser(sys.argv[1:])._actions if a.dest == 'command'); "
            "print(json.dumps([sorted(sub.choices), 'tcpprofile.campaign' in sys.modules, "
            "'tcpprofile.models' in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith('tcpprofile.commands.'))]))")

    def parsers(*argv):
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    # listing the commands (NAME read from the sources) imports no other command's module: only select's
    # and the helpers it imports
    assert parsers("select", "--db", "x", "--rtt", "45ms") == [
        ["select"], False, False, ["tcpprofile.commands.options", "tcpprofile.commands.select",
                                   "tcpprofile.commands.settings_text"]]
    assert parsers("selec")[0] == parsers()[0] == sorted(COMMANDS)
