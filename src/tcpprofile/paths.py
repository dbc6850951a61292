"""Where the built native parts live (build/ at the checkout root, or $TCPPROFILE_BUILD)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("TCPPROFILE_BUILD", ROOT / "build"))


# Every kernel object tcpprofile creates carries this prefix (namespaces, interfaces, iptables
# comments, tracing instances, BPF struct_ops names use "tp_").
PREFIX = "tcpp"
