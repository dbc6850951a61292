"""H-TCP's predictions are frozen for validation (issue 20's sealed-store protocol): a faster evaluation must
give the same numbers. tests/data/htcp_pinned/outputs.npz holds throughput and W_L on 256 of the bench's
configurations in 13 modes (clean, duration, periodic and uniform loss on the fast and the exact path, the
trajectory configuration), as main computed them before H-TCP's loss path was made faster (generate.py)."""

import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / "data" / "htcp_pinned"
sys.path.insert(0, str(DATA))
import generate  # noqa: E402

PINNED = np.load(DATA / "outputs.npz")


@pytest.mark.parametrize("mode", [m[0] for m in generate.MODES])
def test_htcp_outputs_equal_the_pinned_ones(mode):
    """Every mode within 10⁻¹² relative of the pinned numbers (measured: ≤ 1.5·10⁻¹⁵), nan (loss not
    binding) on the same rows; the pinned rows include 128 whose W_L is solved by regula falsi."""
    tau, n, beta, wmax = (PINNED[k] for k in ("tau", "n", "beta", "wmax"))
    spec = next(m for m in generate.MODES if m[0] == mode)
    c = generate.model(*spec[1:4]).components(tau, n=n, buffer=beta, wmax=wmax, **spec[4])
    for key in ("throughput", "W_L"):
        np.testing.assert_allclose(c[key], PINNED[f"{mode}|{key}"], rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=f"{mode} {key}")
    if "loss" in spec[4]:
        assert np.isfinite(c["W_L"]).mean() > 0.5  # the loss binds on most pinned rows: W_L is exercised
