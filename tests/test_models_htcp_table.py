"""H-TCP's tabulated W_m (htcp_table.py) against the exact path: the error the docs state."""

import math
import sys
from pathlib import Path

import numpy as np

from tcpprofile.models import HTCP, make_model
from tcpprofile.models import htcp_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_models import configs  # noqa: E402


def test_tabulated_throughput_within_the_stated_error():
    tab = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9)
    exact = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9, tabulated=False)
    tau, n, beta, wmax, size = configs(5000, seed=3)
    a = tab.components(tau, n=n, buffer=beta, wmax=wmax, size=size)
    b = exact.components(tau, n=n, buffer=beta, wmax=wmax, size=size)
    err = np.abs(a["throughput"] / b["throughput"] - 1)
    assert err.max() < 5e-3 and np.quantile(err, 0.99) < 1e-3
    both = np.isfinite(a["W_m"]) & np.isfinite(b["W_m"])
    assert np.abs(a["W_m"][both] / b["W_m"][both] - 1).max() < 7e-3


def test_rows_off_the_table_take_the_exact_path():
    tab, exact = HTCP(buffer_bytes=1e6), HTCP(buffer_bytes=1e6, tabulated=False)
    tau = np.array([2.0, 0.01, 0.01])  # τ beyond 1 s; n beyond N_MAX; q = β/(Cτ) beyond 100
    n = np.array([1, htcp_table.N_MAX + 2, 1])
    beta = np.array([1e6, 1e6, 2e9])
    np.testing.assert_array_equal(tab.predict(tau, n=n, buffer=beta, wmax=math.inf),
                                  exact.predict(tau, n=n, buffer=beta, wmax=math.inf))


def test_table_key_is_what_eq8_depends_on():
    a = HTCP(buffer_bytes=1e6, wmax_bytes=1e8, size_bytes=1e9)
    b = HTCP(buffer_bytes=5e7, wmax_bytes=math.inf, initial_window=20)
    a.predict(0.05), b.predict(0.05)
    info = htcp_table.table.cache_info()
    b.predict(0.07)
    assert htcp_table.table.cache_info().misses == info.misses
