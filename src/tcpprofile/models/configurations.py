"""The named model configurations of `model fit`, `model validate`, `select --extrapolate` and the report
(docs/models.md, "Model configurations"): (model parameters, per-variant parameters) on top of fit_rows'
settings for measured runs (queue_fill, receiver_report, the measured start-up lag). Each is named for what
it adds; DEFAULT_CONFIGURATION is the one that passed the sealed validation (docs/models.md, "The third fresh
store"), used wherever no configuration is named."""

from __future__ import annotations

from ..errors import ValidationError
from .registry import VARIANTS
from .trajectory import SS_BURST, SS_TRAIN_SLOPE, SS_TRAIN_WINDOW

# A configuration's key that is the fit's, not a model parameter: β is the configured buffer (m = 1, not fitted;
# only W_max, when not known, is): every prediction then comes from the run's configuration alone
PHYSICAL_BUFFER = "physical_buffer"

_SS_TRAINS = {"trajectory": True, "ss_burst": 0.0, "ss_train_window": SS_TRAIN_WINDOW, "ss_train_slope": SS_TRAIN_SLOPE,
              PHYSICAL_BUFFER: True}

# name -> (the configuration it extends, its model parameters). A variant's parameters are its model file's
# SETTINGS (models/registry.py): those of the configuration extended, plus the configuration's own.
_DECLARED: dict[str, tuple[str | None, dict]] = {
    # the paper's first-principles rule (Vardoyan, Rao & Towsley §IV), fitted as measured runs are: β and W_max
    # fitted per dataset
    "paper": (None, {}),
    # + slow start's overshoot, the loss burst and the first epochs (trajectory.py); H-TCP's RTT-scaled α; n flows'
    # Phase II growing n× for the per-RTT increases (H-TCP, Reno: flows_phase2). Frozen at c02dcf5
    "trajectory": ("paper", {"trajectory": True}),
    # trajectory + H-TCP's slow-start burst as traced across buffers: two events only where the first drop comes
    # within the first RTT of overload, else one (docs/models.md "H-TCP across buffers"; second_cut_rtt_ratio not in)
    "htcp-burst-regime": ("trajectory", {"trajectory": True}),
    # htcp-burst-regime + slow start's first drop where the queue must also hold one round's burst above C, κ·W
    # (κ = SS_BURST, from the development stores' cwnd traces at the smallest buffer), H-TCP's second slow-start
    # event keeping RTT_min/RTT_max, and β the configured buffer, not fitted (docs/models.md "The slow-start peak
    # at small buffers"). Frozen at 5966895
    "ss-burst-buffer": ("htcp-burst-regime", {"trajectory": True, "ss_burst": SS_BURST, PHYSICAL_BUFFER: True}),
    # ss-burst-buffer with slow start's first drop by its trains (W0·Cτ + s·β: SS_TRAIN_WINDOW, SS_TRAIN_SLOPE from
    # the development stores' cwnd traces) where that comes before the fluid overflow, which then keeps no burst
    # (κ = 0; docs/models.md "Slow start's trains"). Frozen at 97438bc; the validated one (held out ≤ 3.88 %)
    "ss-trains": ("ss-burst-buffer", _SS_TRAINS),
    # ss-trains + the single flow's two outcomes of slow start's end, each from the kernel's code with its
    # probability, predicted as the expected throughput of the two: CUBIC's HyStart delay test ending slow start
    # before the loss (tcp_cubic.c hystart_update), H-TCP's second event keeping 0.5 after a bandwidth sample
    # between the two events (tcp_htcp.c measure_achieved_throughput) — docs/models.md "Single flows"
    "single-flow": ("ss-trains", _SS_TRAINS),
    # ss-trains + H-TCP's bandwidth switch after slow start: congestion avoidance's first two events keep 0.5
    # (tcp_htcp.c htcp_beta_update against the old_maxB slow start's events leave) — docs/models.md "H-TCP's
    # bandwidth switch after slow start"
    "bandwidth-switch": ("ss-trains", _SS_TRAINS),
    # bandwidth-switch + single flows' slow-start trains by link rate: the law traced at 5 Gbit/s as well as at 10
    # (trajectory.py SS_TRAINS_BY_RATE; docs/models.md "Slow start's end at 5 Gbit/s"); n > 1 unchanged
    "trains-by-rate": ("bandwidth-switch", {**_SS_TRAINS, "ss_trains_by_rate": True}),
    # trains-by-rate + single flows' slow-start burst with its two outcomes as traced at their link rate (CUBIC: a
    # share of runs leave a lower window), predicted as the expected throughput of the two (trajectory.py
    # burst_by_rate; docs/models.md "Slow start's burst at 5 Gbit/s")
    "burst-by-rate": ("trains-by-rate", {**_SS_TRAINS, "ss_trains_by_rate": True, "ss_burst_by_rate": True}),
}


def _variant_settings(name: str | None) -> dict[str, dict]:
    """variant -> its parameters in configuration `name`: the extended configuration's, updated with each
    variant's SETTINGS[name] (variants in the order they first set something)."""
    if name is None:
        return {}
    out = {variant: dict(own) for variant, own in _variant_settings(_DECLARED[name][0]).items()}
    for variant, module in VARIANTS.items():
        if name in getattr(module, "SETTINGS", {}):
            out.setdefault(variant, {}).update(module.SETTINGS[name])
    return out


# name -> (model parameters, per-variant parameters)
CONFIGURATIONS: dict[str, tuple[dict, dict]] = {name: (params, _variant_settings(name))
                                                for name, (_, params) in _DECLARED.items()}
# what each adds, in one line (printed with the configuration's name)
SUMMARY = {"paper": "the paper's first-principles rule",
           "trajectory": "the window's trajectory after slow start",
           "htcp-burst-regime": "trajectory + H-TCP's slow-start burst by regime",
           "ss-burst-buffer": "htcp-burst-regime + slow start's round burst, β the configured buffer",
           "ss-trains": "slow start's first drop by its trains, β the configured buffer",
           "single-flow": "ss-trains + CUBIC's HyStart exit and H-TCP's second-event sample, by their probability",
           "bandwidth-switch": "ss-trains + H-TCP's first two congestion-avoidance events at 0.5 (bandwidth switch)",
           "trains-by-rate": "bandwidth-switch + single flows' slow-start trains measured at their link rate",
           "burst-by-rate": "trains-by-rate + single flows' slow-start burst outcomes as traced at their link rate"}
# trains-by-rate + the burst's outcomes: judged against bandwidth-switch (the default before) on the sixth 5 Gbit/s store
# by the rule stated before it was read (docs/models.md "The sixth 5 Gbit/s store"); at 10 Gbit/s the same predictions
DEFAULT_CONFIGURATION = "burst-by-rate"
# the numbered names of before (issue 32): refused, naming the new one
RENAMED = {"default": "paper", "trajectory2": "htcp-burst-regime", "trajectory3": "ss-burst-buffer",
           "trajectory4": "ss-trains"}


def checked(field: str, name: str) -> str:
    """A configuration's name, or a ValidationError on `field`: an old numbered name names its new one."""
    if name in RENAMED:
        raise ValidationError(field, f"{name!r} is now called {RENAMED[name]!r} (configurations are named for "
                                     f"what they add; without a configuration: {DEFAULT_CONFIGURATION!r}, the "
                                     f"validated one)")
    if name not in CONFIGURATIONS:
        raise ValidationError(field, f"{name!r}: one of {', '.join(CONFIGURATIONS)}")
    return name


# variant -> the parameters a lossy link's model does not have, left out of a dataset with external loss (each
# variant's module declares its own: H-TCP's RTT-scaled α)
UNMODELLED_WITH_LOSS = {name: module.UNMODELLED_WITH_LOSS for name, module in VARIANTS.items()
                        if hasattr(module, "UNMODELLED_WITH_LOSS")}


def variant_parameters(variant: str, per_variant: dict | None, *, lossy: bool) -> dict:
    """A configuration's parameters for one variant; on a lossy link without those UNMODELLED_WITH_LOSS."""
    own = dict((per_variant or {}).get(variant.lower(), {}))
    return {k: v for k, v in own.items() if not (lossy and k in UNMODELLED_WITH_LOSS.get(variant.lower(), ()))}


def model_parameters(params: dict) -> dict:
    """A configuration's parameters for the model itself: without the fit's options (PHYSICAL_BUFFER)."""
    return {k: v for k, v in params.items() if k != PHYSICAL_BUFFER}


def configuration(name: str) -> tuple[dict, dict]:
    """(model_params, variant_params) of a named configuration (CONFIGURATIONS)."""
    params, per_variant = CONFIGURATIONS[checked("configuration", name)]
    return dict(params), {k: dict(v) for k, v in per_variant.items()}


def describe_configuration(name: str) -> str:
    """One line naming a configuration, what it adds, whether it is the default, and every parameter it sets."""
    params, per_variant = configuration(name)
    words = [f"{k}={v}" for k, v in params.items()] + [f"{var}: {k}={v}" for var, d in per_variant.items()
                                                        for k, v in d.items()]
    default = ", the default" if name == DEFAULT_CONFIGURATION else ""
    return (f"model configuration: {name}{default} — {SUMMARY[name]}"
            + (f" ({'; '.join(words)})" if words else " (no parameter changed)"))
