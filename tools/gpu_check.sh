#!/usr/bin/env bash
# The lab's GPU checks, for a machine with a CUDA GPU, Triton and its own torch (not the lab's pins):
#   bash tools/gpu_check.sh            # logs, executed notebooks and new recordings go to ${OUT:-/tmp/gpu_check}
#   RECORD="09" NBVAL="notebooks/0[0-4]*.ipynb" GPU_TESTS="tests/test_gpu_recordings.py -k 09" bash tools/gpu_check.sh
# In parallel, each step with a time limit:
#   preflight  python -m labkit.preflight
#   gpu_tests  the tests with CUDA paths, among them the committed recordings against a fresh run
#   record     new recordings of the GPU cells of 05 and 09, into $OUT/recordings (never over the committed
#              ones: compare, then copy them into labkit/gpu_recordings/ yourself), each executed notebook kept
#   nbval_lax  every notebook under nbval-lax, each cell named in the output
# Exits 1 if any step failed or ran out of time. Needs nbclient, ipykernel, ipywidgets, jupytext, nbval
# beside torch (pytest-xdist used if present).
set -u
OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT/executed" "$OUT/recordings"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TORCHINDUCTOR_COMPILE_THREADS=2
PY=${PY:-python3}
LOG=$OUT/gpu_check.log
nvidia-smi -L | tee -a "$LOG"
$PY -c "import torch, triton; print('torch', torch.__version__, '| cuda', torch.cuda.is_available(), '| triton', triton.__version__)" | tee -a "$LOG"
xdist() { $PY -c "import xdist" 2>/dev/null && echo "-n $1 --dist loadfile"; }

# step NAME LIMIT CMD...: run CMD with a time limit; its output goes to $OUT/NAME.txt, its verdict to the log.
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
  echo "=== $name: rc $rc, $((SECONDS - t0)) s" | tee -a "$LOG"; }

step preflight 120 $PY -m labkit.preflight &
step gpu_tests "${TESTS_LIMIT:-240}" $PY -m pytest -q -p no:cacheprovider -rs $(xdist 3) \
  ${GPU_TESTS:-tests/test_gpu_recordings.py tests/test_dce.py tests/test_env.py} &
step record "${RECORD_LIMIT:-240}" $PY tools/record_gpu.py ${RECORD:-05 09} --into "$OUT/recordings" \
  --executed "$OUT/executed" &
step nbval_lax "${NBVAL_LIMIT:-300}" $PY -m pytest -v -p no:cacheprovider --nbval-lax --nbval-current-env $(xdist 8) \
  ${NBVAL:-notebooks/} &
wait
# One log back: each step's verdict, then the tail of its output; nbval's cell verdicts beside it.
grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/nbval_lax.txt" >"$OUT/nbval_cells.log"
for f in "$OUT"/*.txt; do echo "##### $(basename "$f")"; tail -c 6000 "$f"; done >>"$LOG"
rm -f "$OUT"/*.txt
if grep -q "^=== .*: rc [1-9]" "$LOG"; then echo "gpu_check: a step failed (see $LOG)"; exit 1; fi
echo "gpu_check: every step passed"
