"""conftest.require_or_skip / import_or_require: a test that cannot do its real check (another process
holds a kernel registration, a part is not installed) skips on a developer's machine and FAILS where
TCPPROFILE_REQUIRE_PRIVILEGED=1 (CI: the other holder can only be an earlier test's leak)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REQUIRE_PRIVILEGED, import_or_require, require_or_skip

TESTS = Path(__file__).resolve().parent


def outcome(fn, *args) -> tuple[str, str]:
    """('skip' | 'fail', message) of a call that must end the test (a skip is not let through as a pass)."""
    try:
        fn(*args)
    except pytest.skip.Exception as e:
        return "skip", str(e)
    except pytest.fail.Exception as e:
        return "fail", str(e)
    return "returned", ""


def test_skips_without_the_requirement(monkeypatch):
    monkeypatch.delenv(REQUIRE_PRIVILEGED, raising=False)
    assert outcome(require_or_skip, "tp_htcp is registered by another process") == (
        "skip", "tp_htcp is registered by another process")
    monkeypatch.setenv(REQUIRE_PRIVILEGED, "0")
    assert outcome(require_or_skip, "held")[0] == "skip"


def test_fails_under_the_requirement(monkeypatch):
    monkeypatch.setenv(REQUIRE_PRIVILEGED, "1")
    assert outcome(require_or_skip, "tp_htcp is registered by another process") == (
        "fail", f"{REQUIRE_PRIVILEGED}=1, but tp_htcp is registered by another process")


def test_import_or_require(monkeypatch):
    monkeypatch.setenv(REQUIRE_PRIVILEGED, "1")
    assert import_or_require("json", "json is missing") is sys.modules["json"]
    kind, message = outcome(import_or_require, "tcpprofile_no_such_module", "the testbed is not installed")
    assert kind == "fail" and "the testbed is not installed" in message and "tcpprofile_no_such_module" in message
    monkeypatch.delenv(REQUIRE_PRIVILEGED)
    kind, message = outcome(import_or_require, "tcpprofile_no_such_module", "the testbed is not installed")
    assert kind == "skip" and "the testbed is not installed" in message


@pytest.mark.parametrize("required, outcome", [("1", "1 failed"), (None, "1 skipped")])
def test_a_session_reports_it_as_a_failure_in_ci(tmp_path, required, outcome):
    """What CI sees: a pytest session whose test meets a held registration ends failed (exit 1), not green."""
    (tmp_path / "test_held.py").write_text("from conftest import require_or_skip\n\n\n"
                                           "def test_held():\n    require_or_skip('held by another process')\n")
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_PRIVILEGED}
    if required:
        env[REQUIRE_PRIVILEGED] = required
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                        str(tmp_path / "test_held.py")], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert outcome in r.stdout, r.stdout + r.stderr
    assert r.returncode == (1 if required else 0)
    if required:
        assert "held by another process" in r.stdout


def test_no_privileged_test_module_skips_on_its_own():
    """Every skip inside a module of privileged tests goes through conftest (require_or_skip,
    import_or_require), so that CI cannot pass a privileged test that did not run."""
    offenders = []
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text()
        if "mark.privileged" not in text or path.name == Path(__file__).name:
            continue
        offenders += [f"{path.name}:{i}" for i, line in enumerate(text.splitlines(), 1)
                      if "pytest.skip(" in line or "importorskip(" in line or "skipif(" in line]
    assert offenders == []
