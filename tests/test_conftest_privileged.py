"""conftest's collection hook: privileged tests that cannot run here are skipped, saying why, unless
TCPPROFILE_REQUIRE_PRIVILEGED=1 (CI), where collecting one stops the run with a usage error (exit 4)
instead of a green run that tested nothing privileged. Run on the real conftest in an inner pytest
session (pytester), as a non-root user (os.geteuid patched: "needs root" is the reason)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
TESTS = """
import pytest

@pytest.mark.privileged
def test_privileged():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    privileged: needs root and network namespaces\n")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.delenv("TCPPROFILE_REQUIRE_PRIVILEGED", raising=False)
    return pytester


def test_required_but_impossible_is_a_usage_error(inner, monkeypatch):
    inner.makepyfile(TESTS)
    monkeypatch.setenv("TCPPROFILE_REQUIRE_PRIVILEGED", "1")
    result = inner.runpytest("-rs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*TCPPROFILE_REQUIRE_PRIVILEGED=1, but the privileged tests cannot run: needs root*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_required_without_privileged_tests_runs(inner, monkeypatch):
    inner.makepyfile("def test_plain():\n    pass\n")
    monkeypatch.setenv("TCPPROFILE_REQUIRE_PRIVILEGED", "1")
    inner.runpytest().assert_outcomes(passed=1)


def test_not_required_skips_the_privileged_ones_saying_why(inner):
    inner.makepyfile(TESTS)
    result = inner.runpytest("-v", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*::test_privileged SKIPPED*", "*::test_plain PASSED*",
                                 "SKIPPED [[]1[]] *: needs root"])
