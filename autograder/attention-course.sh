#!/bin/sh
# attention-course: `python -m autograder` from the clone that holds this environment, from any
# folder, without activating it. `make install` copies this file to .venv/bin/attention-course
# (the course's tooling is not part of the package students install, so it has no entry point).
bin=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
root=$(CDPATH='' cd -- "$bin/../.." && pwd)
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec "$bin/python" -m autograder "$@"
