#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image; the bundle is
# unpacked in /autograder/source. It installs the grader into a virtual environment,
# /autograder/venv (PEP 668 forbids installing into the system Python of Ubuntu 24.04 and
# Debian 12), from requirements.txt: the book's requirements-grader.lock, only what grading
# needs (PyTorch's CPU build, nbgrader, what they import), every package pinned and hashed,
# for CPython 3.11 on Linux x86_64. So it takes Python 3.11, and installs it where there is
# none (Ubuntu 22.04 has 3.10, Ubuntu 24.04 has 3.12).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV="$ROOT/venv"
export DEBIAN_FRONTEND=noninteractive
# Every download has a timeout and retries, apt's as well as pip's.
apt=(apt-get -o Acquire::Retries=3 -o Acquire::http::Timeout=60 -o Acquire::https::Timeout=60)

usable() {  # a Python 3.11 that can make a virtual environment
    "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' \
        >/dev/null 2>&1
}
find_python() {
    local name
    for name in python3.11 python3; do
        if command -v "$name" >/dev/null && usable "$(command -v "$name")"; then
            command -v "$name"
            return 0
        fi
    done
    return 1
}

if ! PYTHON="$(find_python)"; then
    echo "setup.sh: no Python 3.11 with venv here; installing python3.11"
    "${apt[@]}" update
    if ! "${apt[@]}" install -y --no-install-recommends python3.11 python3.11-venv; then
        "${apt[@]}" install -y --no-install-recommends software-properties-common
        add-apt-repository -y ppa:deadsnakes/ppa
        "${apt[@]}" update
        "${apt[@]}" install -y --no-install-recommends python3.11 python3.11-venv
    fi
    PYTHON="$(find_python)"
fi
if ! command -v bwrap >/dev/null; then  # the kernels' sandbox; grading goes on without one
    ("${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends bubblewrap) ||
        echo "setup.sh: bubblewrap could not be installed; kernels will run unsandboxed"
fi
echo "setup.sh: $("$PYTHON" --version) at $PYTHON, into $VENV"

# AUTOGRADER_VENV_OPTIONS: extra options of `python -m venv` (the project's tests pass
# --system-site-packages --without-pip to reuse an installed environment offline).
"$PYTHON" -m venv ${AUTOGRADER_VENV_OPTIONS:-} "$VENV"
# The lock names PyTorch's CPU index itself (PyPI's torch carries CUDA, GBs). Every download
# has a timeout and retries: an index that does not answer fails the build, never hangs it.
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --require-hashes     --timeout 60 --retries 3 -r "$ROOT/source/requirements.txt"
"$VENV/bin/python" -c "import nbgrader, torch; print('setup.sh: ready, torch', torch.__version__)"
