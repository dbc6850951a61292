"""A live race on plain numbers, for the racing rules' tests (campaign/rules/)."""

from __future__ import annotations


def drive(rule, truth: dict, **kw):
    """Start with no runs, run what the rule's replay asks for (each candidate's next run) until it stops;
    returns (state, the runs it used)."""
    values = {c: [] for c in truth}
    while True:
        st = rule.replay(values, **kw)
        if st.need is None:
            return st, values
        assert st.next and all(i == len(values[c]) for c, i in st.next.items())   # always the next run
        for c in st.next:
            values[c].append(truth[c][len(values[c])])
