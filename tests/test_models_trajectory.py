"""The window's trajectory after slow start (models/trajectory.py, docs/models.md "What shallow buffers
exercise"): the slow-start peak for a given Cτ + β, the loss burst's cuts, CUBIC's first epochs from an
arbitrary start (closed form and fast convergence), H-TCP's RTT-scaled α, and the data/time round trip."""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from tcpprofile.errors import ValidationError
from tcpprofile.models import make_model
from tcpprofile.models.trajectory import Trajectory

C = 10e9
M_BYTES = 8948
M = M_BYTES * 8.0  # one segment  [bits]
VARIANTS = ["stcp", "cubic", "htcp", "reno"]
TAU = np.array([0.0118, 0.0456, 0.0916, 0.183, 0.366])


def _model(variant, **kw):
    return make_model(variant, capacity_bps=C, mss_bytes=M_BYTES, queue_fill=True, trajectory=True, **kw)


def _trajectory(variant, tau, beta_bdp=0.2, n=1, **kw):
    model = _model(variant, **kw)
    tau = np.atleast_1d(np.asarray(tau, float))
    r = model._rows(tau, np.full(tau.shape, float(n)), beta_bdp * C * tau)
    return model, r, Trajectory(model, r, np.full(tau.shape, 0.9 * C), 0.0 * tau, np.full(tau.shape, 10 * M))


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_slow_start_peak_for_a_given_buffer(variant):
    """The fluid, ACK-clocked overflow: the sending rate (twice the ACK rate) passes C at W = Cτ/(2 ln 2);
    within the next RTT the queue holds Cτ((2^x − 1)/ln 2 − x), the drop at x_d, seen τ + β/C later:
    P = Cτ/ln 2 + x_d·Cτ + β for β < (1/ln 2 − 1)Cτ, else 2(Cτ + β); the link carries C from W = Cτ
    (x = log2(2 ln 2)) until then. Checked against brentq's x_d. Mutations that fail: x_d = 0, a detection
    delay of τ (no β/C), P = 2(Cτ + β) at every β."""
    from scipy.optimize import brentq
    q1 = 1 / math.log(2) - 1
    for beta in (0.05, 0.2, 0.4, 0.5, 1.0):
        _, r, tr = _trajectory(variant, TAU, beta)
        if beta < q1:
            xd = brentq(lambda x: (2 ** x - 1) / math.log(2) - x - beta, 0, 1)
            P, seen = C * TAU * (1 / math.log(2) + xd + beta), 1 + xd + beta
        else:
            P, seen = 2 * C * TAU * (1 + beta), 2 + 2 * beta - q1
        np.testing.assert_allclose(tr.P, P, rtol=1e-10)
        kind, dur, data = tr.pieces[0]
        np.testing.assert_allclose(dur, (seen - math.log2(2 * math.log(2))) * TAU, rtol=1e-10)
        np.testing.assert_allclose(data, C * dur, rtol=1e-12)
    # continuous where the drop moves past the first RTT: both forms give 2Cτ/ln 2
    _, _, lo = _trajectory(variant, TAU, q1 * (1 - 1e-9))
    _, _, hi = _trajectory(variant, TAU, q1)
    np.testing.assert_allclose(lo.P, hi.P, rtol=1e-8)
    np.testing.assert_allclose(hi.P, 2 * C * TAU / math.log(2), rtol=1e-12)


def test_the_burst_keeps_two_cuts_then_cuts_while_the_window_overflows():
    """Two congestion events after slow start (CUBIC 0.7², H-TCP 0.5² by htcp_beta_update's first two
    events), then on while W ≥ W_o (STCP: P = 1.95·W_o at β = 0.2 × BDP, 0.875⁶·1.95 < 1 ≤ 0.875⁵·1.95).
    Mutations that fail: one cut only; SS_EVENTS = 1 (H-TCP's 0.5·P = 0.98·W_o stops after one);
    H-TCP's adaptive β on the first events (0.8 at 183 ms)."""
    for variant, keep, k in (("cubic", 0.7 ** 2, 2), ("htcp", 0.25, 2), ("stcp", 0.875 ** 6, 6)):
        _, _, tr = _trajectory(variant, [0.0456, 0.183])
        np.testing.assert_allclose(tr.W1 / tr.P, keep, rtol=1e-12)
        np.testing.assert_array_equal(tr.cuts, k)


def test_cubic_epoch_from_a_given_start_is_the_closed_form():
    """bictcp_update from cwnd W_s with last_max_cwnd O: W(t) = c(t − K)³ + O, K = ∛((O − W_s)/c), and the
    data (1/τ)∫w dt by quadrature. Mutations: origin at W_s (no plateau), the −K⁴ term dropped."""
    model = _model("cubic")
    tau = np.array([0.0456])
    r = model._rows(tau, np.ones(1), np.array([0.2 * C * 0.0456]))
    Ws, O = np.array([1000 * M]), np.array([1200 * M])
    st = model._state(Ws, O, r)
    K = (200 / 0.4) ** (1 / 3)  # [s]
    np.testing.assert_allclose(st["K"], K, rtol=1e-12)
    for t in (0.0, 1.0, K, 12.0):
        D, w = model._grow(Ws, st, np.array([t]), r)
        np.testing.assert_allclose(w, (0.4 * (t - K) ** 3 + 1200) * M, rtol=1e-12)
        ref = quad(lambda x: (0.4 * (x - K) ** 3 + 1200) * M / 0.0456, 0, t)[0]
        np.testing.assert_allclose(D, ref, rtol=1e-9, atol=1e-6)
    t_end = model._t_to(Ws, st, np.array([1300 * M]), r, 0.0)
    np.testing.assert_allclose(t_end, K + (100 / 0.4) ** (1 / 3), rtol=1e-12)


def test_cubic_first_epochs_use_fast_convergence():
    """cubictcp_recalc_ssthresh: at the 2nd cut cwnd = 0.7P < last_max = P ⇒ W_max = 0.7P·(1 + 0.7)/2; epoch 1
    ends at W_o < that ⇒ epoch 2's W_max = W_o·0.85. Mutation: fast convergence off (W_max = cwnd) fails."""
    model, r, tr = _trajectory("cubic", [0.0118, 0.183])
    (W1, s1), (W2, s2) = model._first_epochs(tr.P, tr.W1, tr.cuts, r)
    Wo = r.bdp + r.beta
    np.testing.assert_allclose(s1["O"], 0.7 * tr.P * 0.85, rtol=1e-12)
    np.testing.assert_allclose(W2, 0.7 * Wo, rtol=1e-12)
    np.testing.assert_allclose(s2["O"], 0.85 * Wo, rtol=1e-12)


def test_htcp_alpha_is_scaled_by_the_rtt_in_jiffies():
    """htcp_alpha_update: factor·8/scale, scale = ⌊8·HZ/(10·⌈τ·HZ⌉)⌋ ∈ [4, 80] at HZ = 250: ρ = 8/66 at
    11.8 ms (3 jiffies), 2 at 183 ms; α = 2(1 − β)·max(ρ·a(t), 1). With β = 0.5 (s = 1): one segment per
    RTT at 11.8 ms while ρ·a < 1 (to t* = 1 + u*, 1 + 10u* + u*²/4 = 66/8), 2·a(t) per RTT at 183 ms.
    Mutations: τ/100 ms instead of whole jiffies (ρ = 0.118), the floor max(·, 1) dropped, no scaling."""
    model = _model("htcp", rtt_scaling=True)
    r = model._rows(np.array([0.0118, 0.183]), np.ones(2), 0.2 * C * np.array([0.0118, 0.183]))
    np.testing.assert_allclose(r["rho"], [8 / 66, 2.0], rtol=1e-15)
    sc, s = model._sc(r), np.ones(2)
    u_star = -20 + math.sqrt(400 + 4 * (66 / 8 - 1))
    t = np.array([1.0 + u_star, 1.0 + u_star])
    A = model._A(t, s, sc)
    np.testing.assert_allclose(A[0], t[0], rtol=1e-12)  # α = 1 per RTT up to t*
    a_int = t[1] + 5 * u_star ** 2 + u_star ** 3 / 12  # ∫ a(t) dt, Eq. (1)
    np.testing.assert_allclose(A[1], 2 * a_int, rtol=1e-12)  # ρ = 2
    later = np.array([6.0, 6.0])
    A6 = model._A(later, s, sc)
    np.testing.assert_allclose(A6[0] - A[0], (8 / 66) * quad(lambda x: 1 + 10 * (x - 1) + (x - 1) ** 2 / 4,
                                                             t[0], 6.0)[0], rtol=1e-12)
    np.testing.assert_allclose(model._A_inv(A6, s, sc), later, rtol=1e-10)  # A⁻¹(A(t)) = t
    B = model._B(later, s, sc)
    ref = [quad(lambda x, i=i: model._A(np.array([x, x]), s, sc)[i], 0, 6.0)[0] for i in range(2)]
    np.testing.assert_allclose(B, ref, rtol=1e-9)


def test_rtt_scaling_needs_queue_fill():
    with pytest.raises(ValidationError, match="rtt_scaling"):
        make_model("htcp", capacity_bps=C, rtt_scaling=True).predict(0.05, buffer=1e6, wmax=1e9, size=1e9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_data_and_time_are_inverse_through_every_piece(variant):
    """time(data(T)) = T from slow start through the first epochs to the sustained rate (Newton inside the
    Phase I pieces). Mutation: the Phase I inversion taken as linear in time fails."""
    kw = {"rtt_scaling": True} if variant == "htcp" else {}
    _, _, tr = _trajectory(variant, TAU, 0.2, n=4, **kw)
    for T in (0.05, 0.3, 1.0, 3.0, 8.0, 20.0, 60.0):
        T = np.full(TAU.shape, T)
        D = tr.data(T)
        np.testing.assert_allclose(tr.time(D), T, rtol=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_trajectory_rate_tends_to_the_sustained_rate_and_is_off_by_default(variant):
    """F → ∞: the rate tends to the framework's sustained rate; trajectory=False is the framework as before."""
    kw = dict(receiver_report=True, buffer=None)
    base = make_model(variant, capacity_bps=C, mss_bytes=M_BYTES, queue_fill=True, receiver_report=True)
    traj = _model(variant, receiver_report=True)
    buf = 0.2 * C * TAU / 8
    kw = dict(n=1, buffer=buf, wmax=2 ** 30)
    big = 1e15
    np.testing.assert_allclose(traj.predict(TAU, size=big, **kw), base.predict(TAU, size=big, **kw), rtol=2e-3)
    assert not np.allclose(traj.predict(TAU, size=1e10, **kw), base.predict(TAU, size=1e10, **kw), rtol=1e-3)
    assert make_model(variant).trajectory is False


def test_fit_profiles_takes_per_variant_parameters():
    """model fit --configuration trajectory: trajectory=True for every variant, rtt_scaling=True for H-TCP only
    (variant_params). Profiles generated by those models are fitted back within 0.5 %; H-TCP fitted without
    its RTT scaling misses them. Mutation: variant_params ignored (H-TCP fitted unscaled) fails."""
    from tcpprofile.models import fit_profiles
    rows = []
    for variant, extra in (("cubic", {}), ("htcp", {"rtt_scaling": True})):
        m = _model(variant, receiver_report=True, **extra)
        for n in (1, 4):
            buf = 0.3 * C * TAU / 8
            for tau, b, th in zip(TAU, buf, m.predict(TAU, n=n, buffer=0.5 * buf, wmax=1e9, size=1e10)):
                rows.append(dict(variant=variant, streams=n, rtt_s=tau, rate_bps=C, buffer="0.3xBDP",
                                 configured_buffer_bytes=b, transfer_bytes=1e10, throughput_bps=th,
                                 mtu=9000))
    table = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    fits = fit_profiles(table, heldout=False, trajectory=True, variant_params={"htcp": {"rtt_scaling": True}})
    assert {f.key["variant"]: f.model.get_params().get("rtt_scaling") for f in fits} == {"cubic": None, "htcp": True}
    for f in fits:
        assert max(f.errors.values()) < 0.5, (f.key["variant"], f.errors)
    plain = [f for f in fit_profiles(table, heldout=False, trajectory=True) if f.key["variant"] == "htcp"][0]
    assert max(plain.errors.values()) > 1.0


@pytest.mark.parametrize("tau", [0.0456, 0.183])
def test_htcp_burst_has_two_events_only_when_the_drop_comes_within_the_first_rtt(tau):
    """burst_by_regime: two 0.5 cuts where the first drop comes within the first RTT of overload (β < (1/ln 2 − 1)·Cτ
    = 0.443 × BDP), one above, where P = 2·W_o leaves exactly W_o, which is not cut again; α after a 0.5 cut:
    s = 2(1 − 0.5) = 1. Off: two cuts everywhere (the frozen 'trajectory'). Mutations that fail: a window at W_o
    cut again (≥ instead of >: W1 = P/4 above the boundary), two events everywhere, one event everywhere."""
    for y, cuts in ((0.05, 2), (0.2, 2), (0.44, 2), (0.45, 1), (0.5, 1), (1.0, 1), (2.0, 1)):
        model, r, tr = _trajectory("htcp", tau, beta_bdp=y, burst_by_regime=True)
        np.testing.assert_array_equal(tr.cuts, cuts)
        np.testing.assert_allclose(tr.W1 / tr.P, 0.5 ** cuts, rtol=1e-12)
        if cuts == 1:
            np.testing.assert_allclose(tr.W1, r.bdp + r.beta, rtol=1e-12)  # P = 2(Cτ + β): one cut leaves W_o
        ((_, st),) = model._first_epochs(tr.P, tr.W1, tr.cuts, r)
        np.testing.assert_allclose(st["s"], 1.0, rtol=0)
    for y in (0.2, 1.0):
        _, _, tr = _trajectory("htcp", tau, beta_bdp=y)
        np.testing.assert_array_equal(tr.cuts, 2)


def test_htcp_second_cut_keeps_rtt_min_over_rtt_max():
    """second_cut_rtt_ratio (htcp_beta_update with maxB = old_maxB = 0: modeswitch set by the first event): the
    second event keeps b = RTT_min/RTT_max = 1/(1 + β/(Cτ)) clamped to [0.5, 0.8] — 0.8 at β = 0.2 × BDP for
    τ > 12 ms, 0.5 at 11.8 ms (minRTT = 3 jiffies = msecs_to_jiffies(10): BETA_MIN) — and α after it is
    2(1 − b)·factor: s = 1, 0.4, 0.4. At 0.3 × BDP b = 1/1.3. Mutation: 0.5 at the second event fails."""
    taus = [0.0118, 0.0456, 0.183]
    model, r, tr = _trajectory("htcp", taus, beta_bdp=0.2, second_cut_rtt_ratio=True)
    b = np.array([0.5, 0.8, 0.8])
    np.testing.assert_array_equal(tr.cuts, 2)
    np.testing.assert_allclose(tr.W1 / tr.P, 0.5 * b, rtol=1e-12)
    ((_, st),) = model._first_epochs(tr.P, tr.W1, tr.cuts, r)
    np.testing.assert_allclose(st["s"], 2 * (1 - b), rtol=1e-12)
    model, r, tr = _trajectory("htcp", [0.183], beta_bdp=0.3, second_cut_rtt_ratio=True)
    np.testing.assert_allclose(tr.W1 / tr.P, 0.5 / 1.3, rtol=1e-12)


def test_htcp_burst_regime_is_the_frozen_trajectory_plus_the_burst_regime():
    """CONFIGURATIONS: 'trajectory' as frozen at c02dcf5 (its validation results stay reproducible);
    'htcp-burst-regime' adds H-TCP's burst_by_regime only. Mutations: the option added to 'trajectory', or left out
    of 'htcp-burst-regime'."""
    from tcpprofile.models.configurations import configuration
    frozen = ({"trajectory": True}, {"htcp": {"rtt_scaling": True, "flows_phase2": True},
                                     "reno": {"flows_phase2": True}})
    assert configuration("trajectory") == frozen
    params, per_variant = configuration("htcp-burst-regime")
    assert params == frozen[0]
    assert per_variant == {"htcp": {**frozen[1]["htcp"], "burst_by_regime": True}, "reno": frozen[1]["reno"]}


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_slow_start_peak_with_the_rounds_burst(variant):
    """ss_burst κ: the first drop where the fluid queue plus κ·W reaches β (W = Cτ·2^x/(2 ln 2)). Before t0
    (β < κ·Cτ/(2 ln 2)) P = 2β/κ; within the first RTT of overload (2^x − 1)/ln 2 − x + κ·2^x/(2 ln 2) = β/Cτ,
    P = Cτ/ln 2 + x_d·Cτ + β_eff; after it x_d − 1 = (β/Cτ − q1 − κ/ln 2)/(1 + κ), P = Cτ(2/ln 2 − 2 + 2x_d).
    Checked against brentq on the queue's own equation, continuity at both boundaries, and κ = 0 (the fluid peak).
    Mutations that fail: the burst left out of β_eff, P = 2β/κ + β in (a), the (1 + κ) left out in (c)."""
    from scipy.optimize import brentq
    L, h, q1 = math.log(2), 0.5 / math.log(2), 1 / math.log(2) - 1
    k = 0.074
    for y in (0.01, 0.03, 0.05, 0.2, 0.5, 1.0):
        _, _, tr = _trajectory(variant, TAU, y, ss_burst=k)
        if y < k * h:
            P = 2 * y / k
        elif y < q1 + k / L:
            x = brentq(lambda x: (2 ** x - 1) / L - x + k * h * 2 ** x - y, 0, 1)
            P = 1 / L + x + (y - k * h * 2 ** x)
        else:   # the queue after the first RTT: q1 + (x − 1), the window 1/ln 2 + (x − 1); q + κ·W = β
            x = brentq(lambda x: q1 + (x - 1) + k * (1 / L + x - 1) - y, 1, 10)
            P = (1 / L + x - 1) + 1 + (q1 + x - 1)        # the window at the drop, grown for τ + q/C
        np.testing.assert_allclose(tr.P, np.maximum(P, 1.0) * C * TAU, rtol=1e-10)
    for edge in (k * h, q1 + k / L):                     # continuous where the regime changes
        _, _, lo = _trajectory(variant, TAU, edge * (1 - 1e-9), ss_burst=k)
        _, _, hi = _trajectory(variant, TAU, edge * (1 + 1e-9), ss_burst=k)
        np.testing.assert_allclose(lo.P, hi.P, rtol=1e-7)
    _, _, plain = _trajectory(variant, TAU, 0.2)
    _, _, zero = _trajectory(variant, TAU, 0.2, ss_burst=0.0)
    np.testing.assert_allclose(zero.P, plain.P, rtol=1e-14)
    with pytest.raises(ValidationError, match="ss_burst"):
        _model(variant, ss_burst=1.0)._validate_params()


def test_ss_burst_buffer_is_htcp_burst_regime_plus_the_burst_the_second_cut_and_the_configured_buffer():
    """Mutations that fail: any of the three left out, or added to 'htcp-burst-regime' (frozen with its
    results)."""
    from tcpprofile.models.configurations import PHYSICAL_BUFFER, configuration
    from tcpprofile.models.trajectory import SS_BURST
    p2, v2 = configuration("htcp-burst-regime")
    p3, v3 = configuration("ss-burst-buffer")
    assert p3 == {**p2, "ss_burst": SS_BURST, PHYSICAL_BUFFER: True} and 0.07 <= SS_BURST <= 0.08
    assert v3 == {**v2, "htcp": {**v2["htcp"], "second_cut_rtt_ratio": True}}
    assert "ss_burst" not in p2 and "second_cut_rtt_ratio" not in v2["htcp"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_slow_start_peak_by_the_trains(variant):
    """ss_train_window W0, ss_train_slope s: the loss is seen at P = 2(W0·Cτ + s·β) wherever that is below the
    fluid overflow's peak (κ = 0 here), and the link carries C for (P − Cτ)/C before it; elsewhere the fluid peak
    and its clock are kept. W0 = 0 leaves the fluid peak to 1e-14. Mutations that fail: P = W0·Cτ + s·β (no
    doubling), the trains' P without the min, the fluid's `over` kept where the trains decide."""
    w0, s = 0.534, 2.346
    for y in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
        _, _, fluid = _trajectory(variant, TAU, y)
        _, _, tr = _trajectory(variant, TAU, y, ss_train_window=w0, ss_train_slope=s)
        P_train = 2 * (w0 + s * y) * C * TAU
        np.testing.assert_allclose(tr.P, np.minimum(P_train, fluid.P), rtol=1e-12)
        over = tr.pieces[0][1]
        if (P_train < fluid.P).all():
            np.testing.assert_allclose(over, (P_train - C * TAU) / C, rtol=1e-12)
        else:
            np.testing.assert_allclose(over, fluid.pieces[0][1], rtol=1e-12)
    # the doubling: at β = 0.1 × BDP the traced peak (1.47-1.56 × BDP, benchmarks/data/slow-start-drop.csv)
    _, _, tr = _trajectory(variant, TAU, 0.1, ss_train_window=w0, ss_train_slope=s)
    np.testing.assert_allclose(tr.P / (C * TAU), 2 * (0.534 + 0.2346), rtol=1e-12)   # 1.537
    _, _, off = _trajectory(variant, TAU, 0.2, ss_train_window=0.0, ss_train_slope=s)
    _, _, plain = _trajectory(variant, TAU, 0.2)
    np.testing.assert_allclose(off.P, plain.P, rtol=1e-14)
    for name, bad in (("ss_train_window", 4.0), ("ss_train_window", -0.1), ("ss_train_slope", -1.0)):
        with pytest.raises(ValidationError, match=name):
            _model(variant, **{name: bad})._validate_params()


def test_a_drop_by_the_trains_is_a_drop_before_the_link_is_full():
    """H-TCP's burst_by_regime counts two events where the first drop comes before the link is full: with the
    trains deciding at β = 0.6 × BDP (where the fluid drop comes after the first RTT of overload: one event), the
    burst cuts twice. Mutation that fails: `small` left as the fluid's."""
    kw = dict(burst_by_regime=True)
    _, _, fluid = _trajectory("htcp", TAU, 0.6, **kw)
    _, _, tr = _trajectory("htcp", TAU, 0.6, ss_train_window=0.1, ss_train_slope=1.0, **kw)
    np.testing.assert_allclose(tr.P, 1.4 * C * TAU, rtol=1e-12)
    assert (fluid.cuts == 1).all() and (tr.cuts == 2).all()


def test_the_trains_constants_are_the_committed_traces_fit():
    """SS_TRAIN_WINDOW and SS_TRAIN_SLOPE are what benchmarks/slow_start_drop.py --fit gives on the committed
    traces' summary (benchmarks/data/slow-start-drop.csv), to the printed digits; and the law holds the traced
    peaks it was fitted on to within 10 % at every buffer. Mutation that fails: a constant edited by hand."""
    import importlib.util
    from pathlib import Path
    from tcpprofile.models.trajectory import SS_TRAIN_SLOPE, SS_TRAIN_WINDOW
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location("slow_start_drop", bench / "slow_start_drop.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    w0, s, count = mod.fit(str(bench / "data" / "slow-start-drop.csv"))
    assert count >= 40
    assert round(w0, 3) == SS_TRAIN_WINDOW and round(s, 3) == SS_TRAIN_SLOPE
    ys, peaks = mod.train_rows(str(bench / "data" / "slow-start-drop.csv"))
    for y in np.unique(ys):
        assert abs(np.median(peaks[ys == y]) / (2 * (w0 + s * y)) - 1) < 0.10


def test_ss_trains_is_ss_burst_buffer_with_the_trains_and_no_burst():
    """Mutations that fail: the trains left out, κ kept, or the trains added to 'ss-burst-buffer' (frozen)."""
    from tcpprofile.models.configurations import configuration
    from tcpprofile.models.trajectory import SS_TRAIN_SLOPE, SS_TRAIN_WINDOW
    p3, v3 = configuration("ss-burst-buffer")
    p4, v4 = configuration("ss-trains")
    assert p4 == {**p3, "ss_burst": 0.0, "ss_train_window": SS_TRAIN_WINDOW, "ss_train_slope": SS_TRAIN_SLOPE}
    assert v4 == v3 and "ss_train_window" not in p3
