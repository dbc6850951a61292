"""Explicit registry: variant name (as the kernel and the store spell it) → first-principles model class."""

from __future__ import annotations

from ..errors import ValidationError
from .cubic import CUBIC
from .framework import FirstPrinciplesModel
from .htcp import HTCP
from .reno import Reno
from .stcp import STCP

MODELS: dict[str, type[FirstPrinciplesModel]] = {
    "stcp": STCP,
    "scalable": STCP,  # the Linux module name
    "cubic": CUBIC,
    "htcp": HTCP,
    "reno": Reno,
}


def model_class(variant: str) -> type[FirstPrinciplesModel]:
    """The model class of a variant name; ValidationError naming the allowed names otherwise."""
    try:
        return MODELS[str(variant).lower()]
    except KeyError:
        raise ValidationError("variant", f"unknown {variant!r}; allowed: {', '.join(MODELS)}") from None


def make_model(variant: str, **params) -> FirstPrinciplesModel:
    return model_class(variant)(**params)
