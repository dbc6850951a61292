"""Registries derived from packages: a package's modules that declare NAME are its entries (as
scikit-learn's all_estimators walks its modules), so adding an entry is adding one file."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules_of(package: str, path) -> dict[str, ModuleType]:
    """NAME -> module, for every module of `package` (its __path__) that declares NAME, sorted by NAME."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(path):
        module = importlib.import_module(f"{package}.{info.name}")
        name = getattr(module, "NAME", None)
        if name is None:
            continue
        if name in found:
            raise RuntimeError(f"{package}: {found[name].__name__} and {module.__name__} both declare NAME {name!r}")
        found[name] = module
    return dict(sorted(found.items()))
