"""Throughput models: the generic ramp-up/sustainment model (HPDC'17 §3) and first-principles models of
STCP, CUBIC, H-TCP and Reno (Vardoyan, Rao & Towsley §IV), with fitting and validation (fit.py)."""

from .cubic import CUBIC
from .fit import bootstrap_predict, fit_profiles, mean_relative_error, fit_table_from_store
from .lsq import fit_buffer_wmax
from .framework import FirstPrinciplesModel
from .generic import GenericModel, ramp_sustain
from .htcp import HTCP
from .registry import MODELS, make_model, model_class
from .reno import Reno
from .stcp import STCP

__all__ = ["CUBIC", "HTCP", "STCP", "Reno", "GenericModel", "FirstPrinciplesModel", "MODELS", "make_model",
           "model_class", "fit_profiles", "fit_buffer_wmax", "bootstrap_predict", "mean_relative_error",
           "fit_table_from_store", "ramp_sustain"]
