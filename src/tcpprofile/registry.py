"""Registries derived from packages: a package's modules that declare NAME are its entries (as
scikit-learn's all_estimators walks its modules), so adding an entry is adding one file. Used by the
campaign's policies and racing rules, the models, the commands and the report's sections.

NAME (and ORDER, where the entries' order shows) is a one-line literal assignment at a module's top level,
read from the source without importing the module: a registry can list its entries without importing them all
(`tcpprofile select` imports the select command alone), and a module that imports the registry's package
(models/fit.py imports models/registry.py) is not imported by it.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType


def _target(line: str) -> str | None:
    """The name a top-level assignment line assigns (`NAME = …`, `NAME: type = …`), else None."""
    if line[:1].isspace() or "=" not in line:
        return None
    target = line.split("=", 1)[0].split(":", 1)[0].strip()
    return target if target.isidentifier() else None


def _literals(source: str, names: tuple[str, ...]) -> dict:
    """The values of the one-line top-level assignments `NAME = <literal>` in `source` whose target is in
    `names` (only those lines are parsed: reading a command's declaration costs no parse of the module)."""
    found = {}
    for line in source.splitlines():
        if _target(line) in names:
            node = ast.parse(line).body[0]
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def _sources(path):
    """(module name, its source file) of every module and subpackage in `path` (a package's __path__)."""
    for info in pkgutil.iter_modules(path):
        folder = Path(info.module_finder.path)
        yield info.name, (folder / info.name / "__init__.py" if info.ispkg else folder / f"{info.name}.py")


def declared(package: str, path, *, order: bool = False) -> dict[str, str]:
    """NAME -> module name, for every module of `package` (its __path__) that declares NAME, read without
    importing: sorted by NAME, or by each module's ORDER with `order` (ORDER required, no two alike)."""
    found: dict[str, tuple[str, object]] = {}
    seen_order: dict[object, str] = {}
    for stem, file in _sources(path):
        values = _literals(file.read_text(encoding="utf-8"), ("NAME", "ORDER"))
        if "NAME" not in values:
            continue
        name, module = values["NAME"], f"{package}.{stem}"
        if name in found:
            raise RuntimeError(f"{package}: {found[name][0]} and {module} both declare NAME {name!r}")
        if order:
            if "ORDER" not in values:
                raise RuntimeError(f"{module}: declares NAME {name!r} but no ORDER (its place in the list)")
            if values["ORDER"] in seen_order:
                raise RuntimeError(f"{package}: {seen_order[values['ORDER']]} and {module} both declare "
                                   f"ORDER {values['ORDER']!r}")
            seen_order[values["ORDER"]] = module
        found[name] = (module, values.get("ORDER"))
    key = (lambda item: item[1][1]) if order else (lambda item: item[0])
    return {name: module for name, (module, _) in sorted(found.items(), key=key)}


def modules_of(package: str, path, *, order: bool = False) -> dict[str, ModuleType]:
    """NAME -> module, for every module of `package` (its __path__) that declares NAME, imported; in the
    order of `declared`."""
    return {name: importlib.import_module(module) for name, module in declared(package, path, order=order).items()}


def modules_declaring(package: str, path, attr: str) -> list[ModuleType]:
    """The modules and subpackages of `package` (its __path__) that assign `attr` at their top level (a
    declaration that names the module's functions, so it cannot be read without importing), imported, by
    module name."""
    return [importlib.import_module(f"{package}.{stem}") for stem, file in _sources(path)
            if any(_target(line) == attr for line in file.read_text(encoding="utf-8").splitlines())]
