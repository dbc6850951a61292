"""Choosing a configuration for a connection: selection by RTT from measured profiles (select.py), the
small-sample decision rules it and the racing share (decide.py), and racing candidates against a path
(tune.py)."""
