# Sourced by scripts/install, scripts/demo and scripts/test: sets PYTHON, the Python that
# graphmem is (or will be) installed into.
#
# - $PYTHON when set (any Python 3.11+ of your choosing, a virtualenv's included);
# - else this checkout's .venv, when scripts/install made one;
# - else python3.
#
# scripts/install makes .venv only when python3 refuses packages installed with pip
# ("externally-managed-environment", PEP 668: the system Python of Debian 12, Ubuntu
# 23.04 and later), so that the Quick start stays two commands there too.
GRAPHMEM_ROOT="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$GRAPHMEM_ROOT/.venv/bin/python" ]]; then
        PYTHON="$GRAPHMEM_ROOT/.venv/bin/python"
    else
        PYTHON=python3
    fi
fi
export PYTHON
