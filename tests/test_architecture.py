"""The import graph of src/tcpprofile: no circle, no arrow from a lower layer up to a higher one, and no
command importing another command.

A unit is a package or a top-level module of src/tcpprofile ("" is the package's own __init__), or a part
of a stage package (measure/, choose/, store/) whose parts sit at different layers: a module belongs to the
longest unit its name starts with (measure's and choose's own __init__, docstrings only, are foundations).
LAYERS orders every unit, lowest first; a unit imports only units of lower layers (the units of one layer are
independent of each other). Imports inside functions count as well (they are still dependencies); the
registries that find their modules at run time (tcpprofile/registry.py: commands, models, report sections,
campaign policies and rules) are checked by their own tests (tests/test_registries.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tcpprofile.commands import COMMANDS

SRC = Path(__file__).resolve().parents[1] / "src" / "tcpprofile"
LAYERS: list[tuple[str, set[str]]] = [
    ("foundations", {"", "errors", "paths", "registry", "packet_overhead", "same_rtt", "interrupts", "measure",
                     "choose"}),
    ("units and plain helpers", {"units", "choose.decide", "measure.iperf_json", "measure.ping"}),
    # the engine and the store import nothing that drives them
    ("engine, store (its SQL, grouping, export), iperf3", {"testbed", "store", "measure.iperf"}),
    ("kernel and host access, result formats", {"ownprocs", "cc", "measure.trace", "store.formats"}),
    ("checks, spec, import, models, analysis", {"measure.fidelity", "hostcheck", "spec", "store.importer", "models",
                                                "analysis"}),
    ("selection", {"choose.select"}),
    ("campaigns", {"campaign"}),
    ("tuning and reproduction", {"choose.tune", "reproduce"}),
    ("report", {"report"}),
    ("commands", {"commands"}),
    ("cli", {"cli"}),
]
# Arrows up that stay for now, each with its reason; nothing else may go up.
EXCEPTIONS = {
    # calibrate's minimum-RTT estimate reuses fidelity.connections.min_rtt_s (imported inside the function);
    # fidelity sits above testbed because its host sampler reads the netns processes through ownprocs ->
    # testbed.netns.
    "tcpprofile.testbed.calibrate -> tcpprofile.measure.fidelity.connections",
}
COMMAND_MODULES = set(COMMANDS.values())


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _import_nodes():
    """(module, its path, the package a relative import starts from, ImportFrom node) of every `from … import`."""
    mods = _modules()
    for mod, path in mods.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                yield mod, package, node


def _target(package: list[str], node: ast.ImportFrom) -> str:
    base = (package[: len(package) - node.level + 1] if node.level else [])
    return ".".join(base + ([node.module] if node.module else []))


def private_imports() -> list[str]:
    """`from M import _name` where M is another tcpprofile module: a helper private to M used elsewhere."""
    mods = _modules()
    return sorted(f"{mod}: {target}.{alias.name}" for mod, package, node in _import_nodes()
                  if (target := _target(package, node)) in mods and target != mod
                  for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__"))


def import_graph() -> dict[str, set[str]]:
    """module -> the tcpprofile modules it imports (a `from package import name` names the submodule when
    `name` is one, else the package)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _target(package, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    name = sub if sub in mods else target
                    if name in mods and name != mod:
                        edges[mod].add(name)
            elif isinstance(node, ast.Import):
                edges[mod].update(a.name for a in node.names if a.name in mods and a.name != mod)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


UNITS = {u for _, layer in LAYERS for u in layer}


def _unit(mod: str) -> str:
    """The longest unit of LAYERS that mod is or lies in (a module outside every unit: its top-level name)."""
    parts = mod.split(".")[1:]
    return next((u for k in range(len(parts), 0, -1) if (u := ".".join(parts[:k])) in UNITS),
                parts[0] if parts else "")


def _rank(unit: str) -> int:
    return next(i for i, (_, units) in enumerate(LAYERS) if unit in units)


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a unit that is not in a lower layer (a higher one, or a sibling of the same layer)."""
    return [arrow for m, targets in sorted(edges.items()) for t in sorted(targets)
            if _unit(m) != _unit(t) and _rank(_unit(t)) >= _rank(_unit(m))
            and (arrow := f"{m} -> {t}") not in EXCEPTIONS]


def command_to_command(edges: dict[str, set[str]]) -> list[str]:
    """A command's module (commands.COMMANDS) importing another command's module: what both need belongs in a
    module of their own (commands/options.py, commands/settings_text.py) or further down."""
    return [f"{m} -> {t}" for m, targets in sorted(edges.items()) if m in COMMAND_MODULES
            for t in sorted(targets) if t in COMMAND_MODULES]


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in _modules()}
    listed = [u for _, layer in LAYERS for u in layer]
    assert len(listed) == len(set(listed)), "a unit in two layers"
    assert units == set(listed), f"not in LAYERS: {sorted(units - set(listed))}; gone: {sorted(set(listed) - units)}"


def test_the_exceptions_are_still_needed():
    edges = import_graph()
    assert {a for a in EXCEPTIONS if a.split(" -> ")[1] in edges[a.split(" -> ")[0]]} == EXCEPTIONS


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_no_import_from_a_lower_layer_to_a_higher_one():
    assert upward(import_graph()) == []


def test_no_command_imports_another_command():
    assert COMMAND_MODULES <= set(_modules())       # commands.COMMANDS names real modules
    assert command_to_command(import_graph()) == []


def unresolved_imports() -> list[str]:
    """`from M import …` / `import M` of a tcpprofile module M that is not in the tree (a stale name after a
    move, where only a function imports it, is invisible to the graph above)."""
    mods = _modules()
    out = [f"{mod}: {target}" for mod, package, node in _import_nodes()
           if (target := _target(package, node)).split(".")[0] == "tcpprofile" and target not in mods]
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out += [f"{mod}: {a.name}" for a in node.names
                        if a.name.split(".")[0] == "tcpprofile" and a.name not in mods]
    return sorted(out)


def test_every_import_names_a_module_of_the_tree():
    assert unresolved_imports() == []


def test_no_module_imports_another_modules_private_names():
    assert private_imports() == []


def test_the_checks_see_a_circle_and_an_upward_arrow():
    # the walker itself: a made-up graph with one circle and one arrow up is caught
    edges = {"tcpprofile.a": {"tcpprofile.b"}, "tcpprofile.b": {"tcpprofile.a"}}
    assert cycles(edges) == [["tcpprofile.a", "tcpprofile.b"]]
    # and each arrow up below, added to the real graph, is caught
    real = import_graph()
    for mod, target in [("tcpprofile.models.registry", "tcpprofile.reproduce"),
                        ("tcpprofile.cc.registry", "tcpprofile.models"),
                        ("tcpprofile.reproduce.findings", "tcpprofile.cli"),
                        ("tcpprofile.testbed.link", "tcpprofile.measure.trace"),
                        ("tcpprofile.store.db", "tcpprofile.testbed.netns"),
                        ("tcpprofile.cc", "tcpprofile.measure.trace"),      # a sibling of the same layer
                        # the stage packages: measuring does not choose, the store's core does not import
                        ("tcpprofile.measure.iperf", "tcpprofile.choose.select"),
                        ("tcpprofile.store.db", "tcpprofile.store.importer"),
                        ("tcpprofile.choose.decide", "tcpprofile.choose.select")]:
        edges = {m: set(ts) for m, ts in real.items()}          # the real graph, parsed once
        edges[mod].add(target)
        assert upward(edges) == [f"{mod} -> {target}"]
    edges = {m: set(ts) for m, ts in real.items()}
    edges["tcpprofile.commands.tune"].add("tcpprofile.commands.run")
    assert command_to_command(edges) == ["tcpprofile.commands.tune -> tcpprofile.commands.run"]
    assert "tcpprofile.commands.analyze_text" not in COMMAND_MODULES    # a command's helper module is not a command
    # and the real graph is read: the runner imports its policies
    assert "tcpprofile.campaign.policies" in real["tcpprofile.campaign.runner"]
