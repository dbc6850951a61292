"""Per-run fidelity: what the instrument did while one run measured.

A monitor is a context manager around one iperf3 run: `with env.monitor(port) as fid:` and, once the
block has ended, `fid.columns` holds the runs-table columns it measured and `fid.flags` the run flags
it raises. Campaigns store both with the run (ok or failed).

Measured for every run (remote runs: the host and the base RTT only):
  host     CPU busy share (/proc/stat), CPU pressure (PSI "some" stall time / wall time), the largest
           run queue seen (procs_running, sampled every SAMPLE_S), and the CPU used by *foreign*
           processes: user-space processes that are neither this process nor its descendants
           (iperf3, delayd) nor, in remote mode, the run's own elsewhere on this host (ownprocs.py:
           the engines of a testbed link this process runs inside, an iperf3 server holding the far
           end of the run's connections), in cores; kernel threads (softirq work of our own packets)
           are not foreign.
  base RTT the smallest RTT TCP measured on the run's data connections (tcp_info min_rtt, `ss -ti`).
  engines  per direction: release lateness (mean, max) during the run, packets the engine path lost
           (kernel queue full, undeliverable, ENOBUFS), CPU share; the bottleneck's drops and
           overlimits (packets that found the modelled wire busy and queued); packets held at the end;
           stall episodes and their excess lateness, injected holds (issue 33), and from them the largest
           change in Θ the run's stalls could have caused (stall_effect_bound), which grades the stall
           flag: engine_stall beyond the instrument's resolution, else the note engine_stall_minor.
  loss     packets the loss stage (the forward engine's) saw and dropped during the run, checked
           against its rule; uniform loss is reseeded per run from the run id (loss_seed).
  limit    what set the run's rate (limited_by): the sender's tcp_info chrono counters (busy,
           rwnd_limited, sndbuf_limited) and app_limited marks of the data connections, sampled
           during the run, and the busy share of the application CPUs (both ends run there).
Flags and their thresholds (docs/testbed.md gives the measurements behind them): see THRESHOLDS.

Units: every duration inside is in seconds (`_s`): the thresholds, the readings (ss's min_rtt and chrono
counters in ms, the engines' ns counters, PSI's µs are converted where they are read: connections.parse_ss,
monitors.engine_readings, host) and every comparison (verdicts.py, connections.limited_by; a reading on a bound
is inside it: thresholds.beyond). The store keeps its columns' units (rtt_base_ms, engine_*_late_*_us,
engine_*_stall_*_ms, tcp_*_ms; fidelity_json's thresholds under their _ms names), converted at the writing edge
(monitors.store_columns, rtt_columns, limit_columns, Thresholds.stored).

Modules: thresholds.py (Thresholds, RERUN_FLAGS), host.py (HostSampler), connections.py (RttWatcher,
min_rtt_s, limited_by), verdicts.py (one function per flag), monitors.py (remote_monitor, emulated_monitor).
"""
