"""Analysis of measured throughput (HPDC'17 paper §2–§5): profiles, concave/convex regions and the
transition RTT τ_T, dynamics (ramp-up, Poincaré map, Lyapunov exponents, surrogate test), confidence.

Everything works on plain numpy arrays; the *_from_store functions apply it to a store. Units: τ in s,
rates in bit/s, times in s, exponents per sample step (per second for 1 s intervals); the rows (.rows(),
.row()) print and export τ in ms (tau_ms, units.to_ms).

Arrays
  profile_stats(tau_s, throughput, *, flagged=None, key=None, level=0.95, n_boot=2000, ci_method="bca", seed=None)
      -> ProfileStats   (per-run values -> per-τ count, mean, std, median, q1, q3, whiskers, n_outliers,
                    bootstrap CI of the mean, n_flagged; .se, .at(tau_s) interpolates, .rows())
  box_stats(values) -> BoxStats
  classify_regions(tau_s, mean, se=None, *, z=2.0) -> Regions;  regions_of(profile, *, z=2.0) -> Regions
  fit_dual_sigmoid(tau_s, mean, *, capacity=None) -> DualSigmoidFit   (τ_T, kind, a1, tau1, a2, tau2, sse)
  transition_rtt(samples, tau_s, *, capacity=None, key=None, n_boot=200, level=0.95, seed=None) -> Transition
  transition(samples, tau_s, capacity, *, key=None, n_boot=200, level=0.95, seed=None) -> Transition   (the one
      τ_T every reader uses: no bootstrap below 3 runs at a τ; .tau_T -> TauT, measured or censored)
  tau_t_of(fit, rtts_s) -> TauT (.side measured|above|below, .value_s | None, .bound_s, .text() "> 366 ms")
  capacity_of(capacities) -> float | None   (median of the runs' payload ceilings / rates)
  ramp_up(bps, start_s=None, end_s=None, *, fraction=0.9) -> RampUp   (T_R, T_O, f_R, θ̄_R, θ̄_S, Θ_O)
  poincare_points(x) -> (θ_i, θ_{i+1});  poincare_spread(x, *, k=8) -> float in [0, 1]
  local_lyapunov(x, *, pairing="successive"|"neighbour", min_tsep=1) -> array of L_i
  rosenstein(x, *, emb_dim=3, lag=1, min_tsep=None, trajectory_len=20, fit_range=None, fit_offset=None)
      -> Divergence (.status "estimated"|"periodic"|"undetermined", .exponent float | None, .k, .y,
                     .fit_range, .min_tsep, .grows)
  rosenstein_many(xs, *, same, min_tsep=None|int|per-trace) -> list[Divergence]   (batched, same results)
  lyap_rosenstein(x, **same) -> float | None
  min_length(emb_dim, lag, min_tsep, trajectory_len) -> int   (shorter traces: "undetermined")
  lyapunov_test(x, *, n_surrogates=19, alpha=0.05, seed=None, emb_dim=3, lag=1, min_tsep=None,
                trajectory_len=10, fit_offset=None) -> LyapunovTest
      (.divergence, .status, .exponent, .surrogate_exponents, .p_value float | None, .distinguishable)
  lyapunov_tests(xs, *, same) -> list[LyapunovTest]   (batched)
  surrogate_test(x, *, n_surrogates=39, method="iaaft"|"phase", alpha=0.05, statistic=prediction_error,
                 seed=None) -> SurrogateTest (.p_value, .distinguishable)
  trace_dynamics(bps, start_s=None, end_s=None, *, fraction=0.9, emb_dim=3, trajectory_len=10,
                 n_surrogates=0, alpha=0.05, seed=None) -> TraceDynamics
      (.lyapunov float | None, .lyapunov_status, .surrogate_p float | None, .distinguishable bool | None)
  dynamics_many([(bps, start_s, end_s), ...], *, same) -> list[TraceDynamics]   (batched)
  throughput_vs_lyapunov(throughput, exponent) -> Relation   (Spearman ρ, Fig. 14)
  bootstrap_ci(values, stat=np.mean, *, level=0.95, n_boot=2000, method="bca", seed=None) -> (lo, hi)
  vc_bound(n, eps, C=1.0, *, reading="covering") -> probability bound (§5.2, capped at 1)
  log_vc_bound(n, eps, C=1.0, *, reading="covering") -> its natural log, uncapped
  samples_needed(eps, C=1.0, alpha=0.05, *, reading="covering") -> int

Store (con: Store or DuckDB connection; by: dimensions from DIMENSIONS, default DEFAULT_BY)
  load_runs(con, *, exclude_flagged=False) -> Runs;  load_traces(con, run_ids=None, *, per_stream=False)
  profiles_from_store(con, *, by, exclude_flagged, level, n_boot, ci_method, seed) -> list[ProfileStats]
  transitions_from_store(con, *, by, exclude_flagged, n_boot=200, level, seed) -> list[Transition]
  dynamics_from_store(con, *, run_ids=None, per_stream=False, exclude_flagged, n_surrogates=0, seed,
                      **trace_dynamics kwargs) -> list[RunDynamics]
  relations_from_store(con, *, by, dynamics=None, exclude_flagged, distinguishable_only=False)
      -> list[(key, Relation)]   (key: `by` values and tau_s)
  row_key(key) -> the key as printed: tau_s as tau_ms (units.to_ms)
  bounds_from_store(con, *, by, eps=0.1, alpha=0.05, exclude_flagged) -> list[dict]
"""

from ..store.grouping import DEFAULT_BY, DIMENSIONS
from .confidence import bootstrap_ci, log_vc_bound, samples_needed, vc_bound
from .dynamics import (RampUp, Relation, TraceDynamics, dynamics_many, poincare_points, poincare_spread,
                       ramp_up, throughput_vs_lyapunov, trace_dynamics)
from .fromstore import (RunDynamics, bounds_from_store, dynamics_from_store, profiles_from_store,
                        relations_from_store, row_key, transitions_from_store)
from .runs import Runs, Trace, load_runs, load_traces
from .lyapunov import Divergence, local_lyapunov, lyap_rosenstein, min_length, rosenstein, rosenstein_many
from .profiles import BoxStats, ProfileStats, box_stats, profile_stats
from .regions import Regions, classify_regions, regions_of
from .sigmoid import DualSigmoidFit, Transition, fit_dual_sigmoid, flipped_sigmoid, transition_rtt
from .tau_t import TauT, capacity_of, tau_t_of, transition
from .surrogates import (SURROGATES, LyapunovTest, SurrogateTest, lyapunov_test, lyapunov_tests,
                         prediction_error, surrogate_test)

__all__ = [
    "BoxStats", "DEFAULT_BY", "DIMENSIONS", "Divergence", "DualSigmoidFit", "LyapunovTest", "ProfileStats", "RampUp",
    "Regions", "dynamics_many", "lyapunov_test", "lyapunov_tests", "min_length", "rosenstein_many",
    "Relation", "RunDynamics", "Runs", "SURROGATES", "SurrogateTest", "Trace", "TraceDynamics", "Transition",
    "bootstrap_ci", "bounds_from_store", "box_stats", "classify_regions", "dynamics_from_store",
    "fit_dual_sigmoid", "flipped_sigmoid", "load_runs", "load_traces", "local_lyapunov", "log_vc_bound",
    "lyap_rosenstein", "poincare_points", "poincare_spread", "prediction_error", "profile_stats",
    "profiles_from_store", "ramp_up", "regions_of", "relations_from_store", "row_key", "rosenstein", "samples_needed",
    "surrogate_test", "throughput_vs_lyapunov", "trace_dynamics", "transition_rtt", "transitions_from_store",
    "vc_bound", "TauT", "capacity_of", "tau_t_of", "transition",
]
