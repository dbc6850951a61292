"""Where the built native parts live (build/ at the checkout root, or $TCPPROFILE_BUILD), and the
machine-wide run directory of state records (/run/tcpprofile, or $TCPPROFILE_RUN_DIR)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("TCPPROFILE_BUILD", ROOT / "build"))


def run_dir() -> Path:
    """Records of links, tracers and BPF registrations, shared by every checkout on the machine."""
    return Path(os.environ.get("TCPPROFILE_RUN_DIR", "/run/tcpprofile"))


# Every kernel object tcpprofile creates carries this prefix (namespaces, interfaces, iptables
# comments, tracing instances, BPF struct_ops names use "tp_").
PREFIX = "tcpp"
