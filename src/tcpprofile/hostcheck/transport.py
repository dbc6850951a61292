"""How to get a congestion-control variant on a stock host, and the transfer-tool lines that can use it.

A kernel variant (built in, or module tcp_NAME) can be the host default (net.ipv4.tcp_congestion_control),
which every tool inherits. This project's BPF ports (tp_NAME) are selected per socket only: never as a host
or namespace default (a BPF algorithm set as a namespace default leaks a kernel reference). So:
- iperf3 (-C/--congestion, esnet/iperf src/iperf_api.c) and iperf2 (-Z/--tcp-congestion) select per socket:
  printed for every variant;
- globus-url-copy (-p parallelism, -tcp-bs buffer, -cc concurrency: files in flight; globus-gass-copy
  globus-url-copy.c) and the Globus CLI (`globus transfer --perf-p/--perf-cc`, globus/globus-cli
  commands/transfer.py) cannot select an algorithm: the sending host's default applies. They are printed only
  when the variant is that default, set by sysctl.
"""

from __future__ import annotations

from ..cc import registry

CC_KEY = "net.ipv4.tcp_congestion_control"


def plan(variant: str, impl: str, kernel_name: str | None, *, streams: int, buffer_bytes: int | None,
         host: str | None = None) -> dict:
    """{name, impl, how: sysctl|per-socket, steps, commands, default: the name to set as host default or None}."""
    v = registry.VARIANTS.get(variant)
    target = host or "HOST"
    w = f" -w {buffer_bytes}" if buffer_bytes else ""
    if impl == "bpf" and v is not None and v.bpf:
        name = kernel_name if (kernel_name or "").startswith(registry.BPF_PREFIX) else registry.bpf_kernel_name(v)
        steps = [f"BPF port: `tcpprofile cc load {variant}`, per socket only (iperf3 -C {name})",
                 "never as the host or a namespace default (a BPF algorithm set as a namespace default leaks "
                 "a kernel reference)"]
        if v.module:
            steps.append(f"or the kernel's own module: modprobe {v.module}, then {CC_KEY} = {v.kernel} "
                         f"(the reference the port follows; then the Globus tools use it too)")
        steps.append("globus-url-copy / Globus CLI: not printed: they cannot select a per-socket algorithm "
                     "(they use the sending host's default)")
        commands = [f"iperf3 -c {target} -P {streams}{w} -C {name}", f"iperf -c {target} -P {streams}{w} -Z {name}"]
        return {"name": name, "impl": "bpf", "how": "per-socket", "steps": steps, "commands": commands,
                "default": None}
    name = kernel_name or (v.kernel if v else variant)
    module = v.module if v and impl == "module" else None
    # a module must be loaded before sysctl.d names it at boot (systemd-modules-load runs before systemd-sysctl)
    steps = ([f"modprobe {module}", f"echo {module} > /etc/modules-load.d/90-tcpprofile.conf   (loaded at boot, "
              f"before the sysctl.d file sets it)"] if module else []) + [
        f"{CC_KEY} = {name} (in the sysctl.d file above; or per socket: setsockopt(TCP_CONGESTION, \"{name}\"))"]
    bs = f" -tcp-bs {buffer_bytes}" if buffer_bytes else ""
    commands = [f"iperf3 -c {target} -P {streams}{w} -C {name}",
                f"iperf -c {target} -P {streams}{w} -Z {name}",
                f"globus-url-copy -p {streams}{bs} -cc 1 SRC_URL DST_URL   (the sending host's default: {name})",
                f"globus transfer --perf-p {streams} --perf-cc 1 SRC_ENDPOINT:PATH DST_ENDPOINT:PATH   "
                f"(the sending endpoint's default: {name})"]
    return {"name": name, "impl": impl or "builtin", "how": "sysctl", "steps": steps, "commands": commands,
            "default": name}


def inventory_lines(rows: list[dict], current_default: str | None) -> list[str]:
    """hostcheck's congestion-control section: how each variant is had here, and fasterdata's htcp/bbr advice."""
    lines = []
    for r in rows:
        kernel = {"available": f"kernel: {r['kernel_name']} available now",
                  "builtin": f"kernel: {r['kernel_name']} built in",
                  "module": f"kernel: modprobe {r['module']}",
                  "absent": "kernel: not in this kernel",
                  "unknown": "kernel: unknown (no kernel configuration readable)"}[r["kernel"]]
        bpf = "" if r["bpf"] is None else (
            f"; BPF port {r['bpf_name']}: {r['bpf']} (`tcpprofile cc load {r['name']}`, per socket only)")
        lines.append(f"{r['name']}: {kernel}{bpf}")
    usable = [r["kernel_name"] for r in rows if r["name"] in ("htcp", "bbr") and r["kernel"] != "absent"]
    if current_default not in ("htcp", "bbr"):
        how = (f"{CC_KEY} = {usable[0]}" if usable else "neither is in this kernel as its own code")
        lines.append(f"default is {current_default}; fasterdata recommends htcp or bbr as the default: {how}")
    return lines
