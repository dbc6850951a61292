"""The first-principles models, one file per variant: this package's modules that declare NAME are the
registry (tcpprofile/registry.py). A variant's module declares NAME (the variant as cc/registry.py spells
it), ORDER (its place in the list), MODEL (its class) and, where configurations change it, SETTINGS (the
variant's parameters each model configuration adds, configurations.py) and UNMODELLED_WITH_LOSS. Every other
spelling of a variant (the papers' STCP for scalable) comes from cc/registry.py's ALIASES."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ..cc.registry import spellings
from ..errors import ValidationError
from ..registry import modules_of
from .framework import FirstPrinciplesModel

# usual name -> the variant's module, in ORDER
VARIANTS: dict[str, ModuleType] = modules_of(__package__, [str(Path(__file__).parent)], order=True)

# every spelling -> model class: the papers' names (cc's aliases) first, then the usual name
MODELS: dict[str, type[FirstPrinciplesModel]] = {spelling: module.MODEL for name, module in VARIANTS.items()
                                                 for spelling in (*spellings(name)[1:], name)}


def printed_name(model: type[FirstPrinciplesModel]) -> str:
    """The name a model class is printed under: its first spelling in MODELS (the papers' name: stcp)."""
    return next(spelling for spelling, cls in MODELS.items() if cls is model)


def model_class(variant: str) -> type[FirstPrinciplesModel]:
    """The model class of a variant name; ValidationError naming the allowed names otherwise."""
    try:
        return MODELS[str(variant).lower()]
    except KeyError:
        raise ValidationError("variant", f"unknown {variant!r}; allowed: {', '.join(MODELS)}") from None


def make_model(variant: str, **params) -> FirstPrinciplesModel:
    return model_class(variant)(**params)
