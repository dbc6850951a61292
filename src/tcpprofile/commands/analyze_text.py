"""`analyze`'s readable table: throughput in Gbit/s with the unit in the header, a configuration in words
(variant, n, buffer, size or duration, link rate, link buffer, loss), and τ_T as one value or a censored
bound. jsonl and csv keep the machine columns of docs/analysis.md (bit/s, store names)."""

from __future__ import annotations

import math

from ..units import fmt_buffer, fmt_bytes

# Columns holding a throughput [bit/s]: printed /1e9 under "NAME (Gbit/s)" (profiles, regions, dynamics,
# transition, lyapunov rows).
THROUGHPUT = ("mean", "std", "median", "q1", "q3", "whisker_low", "whisker_high", "ci_low", "ci_high",
              "mean_bps", "theta_R_bps", "theta_S_bps", "capacity_bps", "mean_throughput_bps")
PER_MS2 = ("d2", "d2_se")                       # second divided difference [bit/s per ms²]
# transition rows: the table shows the one τ_T text (analysis.tau_t.TauT.text: "137 ms", "> 366 ms")
MACHINE_ONLY = ("tau_T_ms", "tau_T_censored", "tau_T_bound_ms")


def _loss(mode, rate) -> str:
    return "none" if mode in (None, "none") else f"{mode} {rate:g}" if rate is not None else str(mode)


def _amount(size, duration) -> str | None:
    if size is not None and size == size:
        return f"{size / 1e9:g} GB"
    if duration is not None and duration == duration:
        return f"{duration:g} s"
    return None


def _link_buffer(v) -> str:
    return fmt_bytes(int(v)) if isinstance(v, str) and v.isdigit() else str(v)


def key_words(key: dict) -> dict[str, str]:
    """A configuration's dimensions (tcpprofile.store.grouping) in words, in the order given; dimensions
    not named here keep their store name."""
    out: dict[str, str] = {}
    for name, v in key.items():
        if name == "streams":
            out["n"] = "-" if v is None else str(v)
        elif name == "socket_buffer_bytes":
            out["buffer"] = fmt_buffer(None if v is None else int(v))
        elif name in ("transfer_bytes", "duration_target_s"):
            amount = _amount(key.get("transfer_bytes"), key.get("duration_target_s"))
            if amount is not None:
                out["size or duration"] = amount
        elif name == "rate_bps":
            out["link rate"] = "-" if v is None else f"{v / 1e9:g} Gbit/s"
        elif name == "buffer":
            out["link buffer"] = "-" if v is None else _link_buffer(v)
        elif name in ("loss_mode", "loss_rate"):
            out["loss"] = _loss(key.get("loss_mode"), key.get("loss_rate"))
        else:
            out[name] = "-" if v is None else str(v)
    return out


def _number(v) -> str:
    if hasattr(v, "item"):
        v = v.item()
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def readable(row: dict, key_names) -> dict[str, str]:
    """One output row for the table: the key in words, throughputs in Gbit/s, the rest as numbers."""
    out = key_words({k: row[k] for k in key_names if k in row})
    for name, v in row.items():
        if name in key_names or name in MACHINE_ONLY:
            continue
        if name in THROUGHPUT:
            out[f"{name.removesuffix('_bps')} (Gbit/s)"] = _number(None if v is None else v / 1e9)
        elif name in PER_MS2:
            out[f"{name} (Gbit/s/ms²)"] = _number(None if v is None else v / 1e9)
        else:   # a count named n (lyapunov, bound rows) is runs; n is the stream count here
            out["runs" if name == "n" else name] = _number(v)
    return out


def table(rows: list[dict], key_names, out) -> None:
    if not rows:
        print("(no rows)", file=out)
        return
    cells = [readable(r, key_names) for r in rows]
    cols = list(dict.fromkeys(k for r in cells for k in r))
    widths = [max(len(c), *(len(r.get(c, "-")) for r in cells)) for c in cols]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)), file=out)
    for r in cells:
        print("  ".join(r.get(c, "-").rjust(w) for c, w in zip(cols, widths)), file=out)


def _phrase(name: str, value: str) -> str:
    return value if name == "variant" else f"{name} {value}"


def fig10(rows: list[dict], by: tuple[str, ...], out) -> None:
    """τ_T (analysis.tau_t: the dual-sigmoid fit's, censored ones as bounds) with streams down and the
    other `by` values across (Fig. 10); a column says in words what differs, the shared rest is said once."""
    across = [k for k in by if k != "streams"]
    words = {id(r): key_words({k: r[k] for k in across}) for r in rows}
    names = list(dict.fromkeys(n for w in words.values() for n in w))
    shared = {n: next(iter(words.values()))[n] for n in names
              if len({w.get(n) for w in words.values()}) == 1}
    column = {id(r): ", ".join(_phrase(n, w[n]) for w in [words[id(r)]] for n in names
                               if n not in shared and n in w) or "τ_T" for r in rows}
    cols = list(dict.fromkeys(column[id(r)] for r in rows))
    value = {(r["streams"], column[id(r)]): r["tau_T"] for r in rows}
    streams = sorted({r["streams"] for r in rows}, key=lambda v: (v is None, v))
    print("τ_T: the dual-sigmoid fit's transition RTT (HPDC'17 §2.3; analysis.tau_t); "
          "> X: censored beyond the largest measured RTT, < X: below the smallest", file=out)
    if shared:
        print("all columns: " + ", ".join(_phrase(n, v) for n, v in shared.items()), file=out)
    cells = [{"n": "-" if n is None else str(n), **{c: value.get((n, c), "-") for c in cols}} for n in streams]
    heads = ["n", *cols]
    widths = [max(len(h), *(len(r[h]) for r in cells)) for h in heads]
    print("  ".join(h.rjust(w) for h, w in zip(heads, widths)), file=out)
    for r in cells:
        print("  ".join(r[h].rjust(w) for h, w in zip(heads, widths)), file=out)
