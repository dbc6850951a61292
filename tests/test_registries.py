"""One registry pattern (tcpprofile/registry.py): a package's modules that declare themselves are its entries
(NAME: commands, models; SECTIONS: the report's sections, several to a module). Each test here fails when a
module of a registry's package lacks its declaration (the mutations used: delete `NAME = "run"` from
commands/run.py; `NAME = "htcp"` from models/htcp.py; SECTIONS from report/tables.py), so nothing can be left
out of a registry silently."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

from tcpprofile import commands
from tcpprofile.cli import build_parser
from tcpprofile.commands import COMMANDS
from tcpprofile.registry import declared, modules_of


def _modules(package) -> dict[str, object]:
    return {info.name: importlib.import_module(f"{package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(package.__path__) if not info.ispkg}


def test_every_command_module_is_a_registered_command_and_every_other_a_helper():
    """A module of commands/ with register() is a command: it declares NAME, HELP and ORDER and is in
    COMMANDS under NAME; a module without register() is a helper some command imports."""
    modules = _modules(commands)
    commands_here = {m.NAME if hasattr(m, "NAME") else f"<{name} without NAME>": m
                     for name, m in modules.items() if hasattr(m, "register")}
    assert {n: m.__name__ for n, m in commands_here.items()} == COMMANDS
    helpers = {name for name, m in modules.items() if not hasattr(m, "register")}
    assert helpers == {"analyze_text", "options", "settings_text"}
    assert all(not hasattr(modules[h], "NAME") for h in helpers)
    sources = " ".join(importlib.util.find_spec(m).origin and open(importlib.util.find_spec(m).origin).read()
                       for m in COMMANDS.values())
    assert all(f"from .{h} import" in sources or f"from . import {h}" in sources for h in helpers)


def test_help_lists_every_command_with_its_declared_help_in_order():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, module in COMMANDS.items():
        m = importlib.import_module(module)
        assert helps[name] == m.HELP and m.NAME == name
    orders = [importlib.import_module(m).ORDER for m in COMMANDS.values()]
    assert orders == sorted(orders)
    assert list(COMMANDS)[:3] == ["run", "import", "export"]       # measuring first, as the pipeline


def test_declared_reads_without_importing_and_refuses_a_missing_or_repeated_order(tmp_path, monkeypatch):
    pkg = tmp_path / "fakecmds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "beta.py").write_text("NAME = 'beta'\nORDER = 1\nraise ImportError('imported')\n")
    (pkg / "alpha.py").write_text("NAME = 'alpha'  # the entry\nORDER = 2\n")
    (pkg / "helper.py").write_text("def f():\n    NAME = 'not top level'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakecmds
    try:
        assert declared("fakecmds", fakecmds.__path__, order=True) == {"beta": "fakecmds.beta",
                                                                       "alpha": "fakecmds.alpha"}
        assert list(declared("fakecmds", fakecmds.__path__)) == ["alpha", "beta"]       # by NAME
        assert "fakecmds.beta" not in sys.modules                                       # never imported
        with pytest.raises(ImportError, match="imported"):
            modules_of("fakecmds", fakecmds.__path__)
        (pkg / "beta.py").write_text("NAME = 'beta'\nORDER = 2\n")
        with pytest.raises(RuntimeError, match="both declare ORDER 2"):
            declared("fakecmds", fakecmds.__path__, order=True)
        (pkg / "beta.py").write_text("NAME = 'beta'\n")
        with pytest.raises(RuntimeError, match="fakecmds.beta: declares NAME 'beta' but no ORDER"):
            declared("fakecmds", fakecmds.__path__, order=True)
    finally:
        for m in [m for m in sys.modules if m.startswith("fakecmds")]:
            del sys.modules[m]


# --- models: one file per variant ---------------------------------------------------------------------------

def test_every_model_module_is_registered_under_its_cc_name():
    """A module of models/ that defines a FirstPrinciplesModel subclass is a variant's: it declares NAME (a
    usual name of cc/registry.py), ORDER and MODEL, and models/registry.py has it; MODELS spells each variant
    as cc does (the papers' alias first), nothing more."""
    from tcpprofile import models
    from tcpprofile.cc.registry import NAMES, spellings
    from tcpprofile.models.framework import FirstPrinciplesModel
    from tcpprofile.models.registry import MODELS, VARIANTS

    defining = {}
    for name, module in _modules(models).items():
        classes = sorted({c for c in vars(module).values() if isinstance(c, type) and issubclass(c, FirstPrinciplesModel)
                          and c is not FirstPrinciplesModel and c.__module__ == module.__name__}, key=str)
        if classes:
            defining[getattr(module, "NAME", f"<{name} without NAME>")] = (module, classes)
    assert set(defining) == set(VARIANTS) == {"scalable", "cubic", "htcp", "reno"}
    for name, (module, classes) in defining.items():
        assert VARIANTS[name] is module and classes == [module.MODEL] and name in NAMES
    assert list(MODELS) == ["stcp", "scalable", "cubic", "htcp", "reno"]        # `model --help`'s order
    assert {s for n in VARIANTS for s in spellings(n)} == set(MODELS)
    assert all(MODELS[s] is VARIANTS[n].MODEL for n in VARIANTS for s in spellings(n))


def test_each_variants_settings_are_its_own_parameters_of_named_configurations():
    import inspect

    from tcpprofile.models.configurations import CONFIGURATIONS, UNMODELLED_WITH_LOSS
    from tcpprofile.models.registry import VARIANTS

    for name, module in VARIANTS.items():
        accepted = set(inspect.signature(module.MODEL).parameters)
        for config, params in getattr(module, "SETTINGS", {}).items():
            assert config in CONFIGURATIONS and set(params) <= accepted, (name, config)
            assert set(params) <= set(CONFIGURATIONS[config][1][name])     # and the configuration has them
        assert set(UNMODELLED_WITH_LOSS.get(name, ())) <= accepted
    assert UNMODELLED_WITH_LOSS == {"htcp": ("rtt_scaling",)}
    # a configuration has no variant's settings but those its variants' modules declare, for it or one it extends
    assert CONFIGURATIONS["paper"][1] == {} and set(CONFIGURATIONS["single-flow"][1]) == {"htcp", "reno", "cubic"}


def test_configurations_py_names_no_variant():
    """H-TCP's, Reno's and CUBIC's settings live in their model files: configurations.py spells no variant
    (fails with the old `_SECOND_CUT = {"htcp": {...}, "reno": {...}}`)."""
    import ast
    from pathlib import Path

    from tcpprofile.cc.registry import ALIASES, NAMES
    from tcpprofile.models import configurations

    source = Path(configurations.__file__).read_text()
    named = [node.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and node.value in {*NAMES, *ALIASES}]
    assert named == []


# --- report sections: each section module declares its own ---------------------------------------------------

def test_every_report_section_function_is_registered_in_the_reports_order():
    """Every function of report/ that returns a Section is declared by its module (SECTIONS, or IN_WORKER for
    the worker's version of one); fails when SECTIONS is deleted from report/tables.py."""
    import inspect

    from tcpprofile import report

    defined, registered = set(), set()
    for info in pkgutil.walk_packages(report.__path__, "tcpprofile.report."):
        module = importlib.import_module(info.name)
        defined |= {f"{module.__name__}.{n}" for n, fn in vars(module).items() if inspect.isfunction(fn)
                    and fn.__module__ == module.__name__ and fn.__annotations__.get("return") == "Section"}
        registered |= {f"{fn.__module__}.{fn.__name__}" for _, fn in getattr(module, "SECTIONS", {}).values()}
        registered |= {f"{fn.__module__}.{fn.__name__}" for fn in getattr(module, "IN_WORKER", {}).values()}
    assert defined == registered and len(defined) == 17
    assert list(report.SECTIONS) == [
        "operator", "verdicts", "selection", "mean_profiles", "box_plots", "sigmoid_fits", "transition_rtts",
        "traces", "poincare", "lyapunov", "throughput_vs_lyapunov", "model_vs_measurement", "loss_profiles",
        "cwnd_traces", "side_by_side", "calibration"]
    assert set(report.IN_WORKER) <= set(report.SECTIONS)
    inputs = {"data", "out", "store", "exclude_flagged", "refs", "fits"}      # what build_report passes
    for id_, fn in report.SECTIONS.items():
        params = inspect.signature(fn).parameters.values()
        assert {p.name for p in params if p.default is inspect.Parameter.empty} <= inputs, id_


def test_modules_declaring_finds_modules_and_subpackages_by_their_assignment(tmp_path, monkeypatch):
    from tcpprofile.registry import modules_declaring

    pkg = tmp_path / "fakereport"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    return 1\n\n\nSECTIONS = {\"a\": (1, f)}\n")
    (pkg / "b.py").write_text("SECTIONS_NOTE = 1\n# SECTIONS = {}\ndef g():\n    SECTIONS = 2\n")
    (pkg / "sub" / "__init__.py").write_text("SECTIONS: dict = {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakereport
    try:
        assert [m.__name__ for m in modules_declaring("fakereport", fakereport.__path__, "SECTIONS")] == [
            "fakereport.a", "fakereport.sub"]
    finally:
        for m in [m for m in sys.modules if m.startswith("fakereport")]:
            del sys.modules[m]
