"""Measuring one run: iperf3 (iperf.py, its JSON: iperf_json.py), the cwnd trace (trace.py), the one ping of a
host (ping.py), and what the instrument did meanwhile (fidelity/)."""
