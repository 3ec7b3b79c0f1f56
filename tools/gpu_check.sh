#!/usr/bin/env bash
# The lab's GPU checks, for a machine with a CUDA GPU and its own torch (not the lab's pins).
# Runs: the CUDA-only tests, the pre-flight check, notebook 04 executed on the GPU (kept as an
# artifact), then every notebook under nbval-lax. Writes logs to ${OUT:-/tmp/gpu_check}.
set -u
OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
PY=${PY:-python3}
nvidia-smi -L
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
step() { local name=$1 limit=$2; shift 2; echo "=== $name"; local t0=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"; echo "=== $name: rc ${PIPESTATUS[0]}, $((SECONDS - t0)) s"; }
step preflight 120 $PY -m labkit.preflight
step gpu_tests 240 $PY -m pytest -q -p no:cacheprovider -rs tests/test_dce.py tests/test_env.py
step nb04_gpu 240 $PY tools/build_notebooks.py --any-torch 04  # the machine's torch, not the reference one
cp notebooks/04_*.ipynb "$OUT/"
step nbval_lax "${NBVAL_LIMIT:-300}" $PY -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env notebooks/
