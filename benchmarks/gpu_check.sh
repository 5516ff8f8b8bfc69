#!/usr/bin/env bash
# The GPU check of issue 43 (benchmarks/gpu_check.py), in well under 10 minutes on a GPU:
#   bash benchmarks/gpu_check.sh OUT_DIR                       # on the GPU machine
#   bash benchmarks/gpu_check.sh OUT_DIR --device cpu --small  # a dry run on a CPU
# Python: $PYTHON, else the repository's .venv, else python3 (a GPU image's torch); burnish
# runs from src/ and MNIST from data/, so nothing needs installing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export BURNISH_DATASETS="${BURNISH_DATASETS:-$PWD/data}" PYTHONUNBUFFERED=1
exec "$PYTHON" -m benchmarks.gpu_check "$@"
