"""The import graph of src/tcpprofile: no circle, and no arrow from a lower layer up to a higher one.

Layers, lowest first (a module may import its own layer and the ones below):
store, testbed and the plain helpers; then cc, trace; then models, analysis; then campaign, select,
tune, reproduce, report; then commands and cli. Imports inside functions count as well (they are
still dependencies); the registries that find their modules at run time (campaign/registry.py)
are checked by their own tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tcpprofile"
# testbed and store import nothing from these (issue 22): the engine never depends on what drives it
FORBIDDEN = {
    "testbed": {"campaign", "commands", "cc", "trace", "models", "analysis", "report", "reproduce", "select", "tune"},
    "store": {"campaign", "commands", "cc", "trace", "testbed", "models", "analysis", "report", "reproduce",
              "select", "tune"},
    "campaign": {"commands", "cli"},
    "models": {"commands", "cli", "campaign", "report"},
    "analysis": {"commands", "cli", "campaign", "report"},
}


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


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward(edges: dict[str, set[str]]) -> list[str]:
    return [f"{m} -> {t}" for m, targets in sorted(edges.items()) for t in sorted(targets)
            if _layer(t) in FORBIDDEN.get(_layer(m), set())]


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_no_import_from_a_lower_layer_to_a_higher_one():
    assert upward(import_graph()) == []


def test_no_module_imports_another_modules_private_names():
    assert private_imports() == []


def test_the_checks_see_a_circle_and_an_upward_arrow():
    # the walker itself: a made-up graph with one circle and one arrow up is caught
    edges = {"tcpprofile.a": {"tcpprofile.b"}, "tcpprofile.b": {"tcpprofile.a"},
             "tcpprofile.testbed.x": {"tcpprofile.trace"}, "tcpprofile.trace": set()}
    assert cycles(edges) == [["tcpprofile.a", "tcpprofile.b"]]
    assert upward(edges) == ["tcpprofile.testbed.x -> tcpprofile.trace"]
    # and the real graph is read: the runner imports its policies
    assert "tcpprofile.campaign.policies" in import_graph()["tcpprofile.campaign.runner"]
