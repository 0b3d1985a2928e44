"""scripts/install on a system Python that refuses pip installs (PEP 668: Debian 12,
Ubuntu 23.04 and later): the Quick start must stay two commands there, so it installs
into a .venv of the checkout, which scripts/demo and scripts/test then use.

A stand-in ``python3`` on PATH plays the system Python (it refuses ``pip install`` the
way pip does, and makes a stand-in virtual environment whose ``python`` records what it
is asked): what is tested is the script's choice, with no network and no real install."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from conftest import REPO

SYSTEM_PYTHON = """#!/usr/bin/env bash
echo "python3 $*" >> "$CALLS"
if [[ "$1 $2" == "-m pip" ]]; then
    echo "error: ${PIP_ERROR}" >&2
    exit 1
fi
if [[ "$1 $2" == "-m venv" ]]; then
    [[ -n "${VENV_FAILS:-}" ]] && { echo "ensurepip is not available" >&2; exit 1; }
    mkdir -p "$3/bin"
    printf '#!/usr/bin/env bash\\necho "venv-python $*" >> "$CALLS"\\n' > "$3/bin/python"
    chmod +x "$3/bin/python"
    exit 0
fi
exit 2
"""


def checkout(tmp_path: Path) -> Path:
    """A checkout holding the two scripts under test, and a bin folder with the stand-in."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("install", "_python.sh"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text(SYSTEM_PYTHON)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return root


def run(tmp_path: Path, root: Path, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    environment.update(PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", CALLS=str(tmp_path / "calls"), **env)
    return subprocess.run(["bash", "-c", script], cwd=root, env=environment, capture_output=True, text=True)


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls").read_text().splitlines()


def test_a_system_managed_python_gets_a_venv_that_the_other_scripts_use(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    done = run(tmp_path, root, "scripts/install dev", PIP_ERROR="externally-managed-environment")
    assert done.returncode == 0, done.stderr
    assert "installing into" in done.stderr and ".venv" in done.stderr
    venv_python = root / ".venv" / "bin" / "python"
    assert calls(tmp_path) == [
        f"python3 -m pip install --disable-pip-version-check --quiet --root-user-action=ignore -e {root}[dev]",
        f"python3 -m venv {root}/.venv",
        f"venv-python -m pip install --disable-pip-version-check --quiet --root-user-action=ignore -e {root}[dev]",
    ]
    # What scripts/demo and scripts/test run with from then on; PYTHON still wins.
    chosen = run(tmp_path, root, 'source scripts/_python.sh && echo "$PYTHON"', PIP_ERROR="")
    assert chosen.stdout.strip() == str(venv_python)
    chosen = run(tmp_path, root, 'source scripts/_python.sh && echo "$PYTHON"', PYTHON="/opt/py/bin/python")
    assert chosen.stdout.strip() == "/opt/py/bin/python"


def test_another_pip_failure_is_no_reason_for_a_venv(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    done = run(tmp_path, root, "scripts/install", PIP_ERROR="No matching distribution found for spacy")
    assert done.returncode == 1 and "No matching distribution" in done.stderr
    assert not (root / ".venv").exists() and len(calls(tmp_path)) == 1


def test_a_missing_venv_module_says_what_to_install_and_leaves_no_venv(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    done = run(tmp_path, root, "scripts/install", PIP_ERROR="externally-managed-environment", VENV_FAILS="1")
    assert done.returncode == 1 and "python3-venv" in done.stderr
    assert not (root / ".venv").exists()
