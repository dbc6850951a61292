"""The policy and racing-rule registries are their packages: every module with NAME is an entry,
with the hooks the runner and `tune` call."""

from __future__ import annotations

import inspect
import sys

import pytest

from tcpprofile.campaign.policies import POLICIES
from tcpprofile.campaign.policy import BasePolicy, Policy
from tcpprofile.registry import modules_of
from tcpprofile.campaign.rules import DEFAULT_RULE, RULES


def test_every_policy_module_is_registered_with_every_hook():
    assert set(POLICIES) == {"fixed", "adaptive", "racing"}
    hooks = [name for name, _ in inspect.getmembers(Policy, inspect.isfunction) if not name.startswith("_")]
    assert set(hooks) == {"plan", "total", "observe", "progress_note", "stops", "summary_notes"}
    for name, cls in POLICIES.items():
        assert issubclass(cls, BasePolicy), name
        assert all(callable(getattr(cls, h, None)) for h in hooks), name


def test_every_rule_module_is_registered_and_tune_reads_it():
    from tcpprofile.choose import tune
    assert set(RULES) == {"confirm", "model", "paired"} and DEFAULT_RULE in RULES
    for name, rule in RULES.items():
        assert rule.NAME == name and rule.DESCRIPTION and rule.FIRST >= 2
        assert {"first", "max_rounds", "margin", "confidence", "simplicity", "affordable"} <= set(
            inspect.signature(rule.replay).parameters)
    res = tune.TuneResult("c", None, None, 0, [], 0.0, None, 0.0, 0, rule="paired")
    assert RULES["paired"].DESCRIPTION in tune.format_result(res, margin=0.01, confidence=0.95)


def test_a_new_module_is_an_entry_and_a_duplicate_name_is_refused(tmp_path, monkeypatch):
    pkg = tmp_path / "fakerules"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha.py").write_text("NAME = 'alpha'\n")
    (pkg / "helper.py").write_text("X = 1\n")        # no NAME: not an entry
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakerules
    assert list(modules_of("fakerules", fakerules.__path__)) == ["alpha"]
    (pkg / "beta.py").write_text("NAME = 'alpha'\n")
    with pytest.raises(RuntimeError, match="both declare NAME 'alpha'"):
        modules_of("fakerules", fakerules.__path__)
    for m in [m for m in sys.modules if m.startswith("fakerules")]:
        del sys.modules[m]


def test_tune_refuses_an_unknown_rule_naming_the_flag(capsys):
    from tcpprofile.cli import main
    assert main(["tune", "--db", "/nonexistent/x.duckdb", "--rtt", "10ms", "--rule", "bogus"]) == 2
    assert "--rule: one of confirm, model, paired, got 'bogus'" in capsys.readouterr().err
