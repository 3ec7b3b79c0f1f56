#!/usr/bin/env bash
# The lab's GPU checks, in one call of at most 8 minutes on a machine with a CUDA GPU, Triton and its own torch
# (the machine's python3 and packages, not the lab's pins):
#   OUT=/some/folder bash tools/gpu_check.sh     # everything goes to $OUT (default /tmp/gpu_check)
# then, back on your own machine:  python tools/gpu_runs.py take /some/folder
# In parallel, each step with a time limit (the sum of what runs at once stays under 16 cores):
#   preflight    python -m labkit.preflight
#   gpu_tests    the tests with CUDA-only paths (tests/labkit/test_experiments.py, tests/labkit/test_env.py)
#   record_NN    a fresh recording of each notebook with GPU cells, into $OUT/recordings, executed notebook kept
#   nbval_lax    every notebook under nbval-lax with CUDA, each cell's verdict named in $OUT/nbval_cells.log
# Then tools/gpu_runs.py summarize writes $OUT/gpu-run.json (device, torch, Triton, commit, per-notebook cells).
# Exits 1 if any step failed or ran out of time. Needs nbclient, ipykernel, ipywidgets, jupytext, nbval beside
# torch (pytest-xdist used if present).
set -u
OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT/executed" "$OUT/recordings"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TORCHINDUCTOR_COMPILE_THREADS=2
PY=${PY:-python3}
LIMIT=${LIMIT:-420}   # each step's limit, in seconds: the call as a whole ends within about 8 minutes
LOG=$OUT/gpu_check.log
: >"$LOG"
nvidia-smi -L | tee -a "$LOG"
$PY -c "import torch, triton; print('torch', torch.__version__, '| cuda', torch.cuda.is_available(), '| triton', triton.__version__)" | tee -a "$LOG"
xdist() { $PY -c "import xdist" 2>/dev/null && echo "-n $1 --dist loadfile"; }

# step NAME LIMIT CMD...: run CMD with a time limit; its output goes to $OUT/NAME.txt, its verdict to the log.
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
  echo "=== $name: rc $rc, $((SECONDS - t0)) s" | tee -a "$LOG"; }

step preflight 150 $PY -m labkit.preflight &
step gpu_tests "$LIMIT" $PY -m pytest -q -p no:cacheprovider -rs $(xdist 2) tests/labkit/test_experiments.py tests/labkit/test_env.py &
for nn in $(PYTHONPATH="$PWD/tools:$PYTHONPATH" $PY -c "import gpu_runs; print(*gpu_runs.numbers_with_gpu_cells())"); do
  step "record_$nn" "$LIMIT" $PY tools/record_gpu.py "$nn" --into "$OUT/recordings" --executed "$OUT/executed" &
done
step nbval_lax "$LIMIT" $PY -m pytest -v -p no:cacheprovider --nbval-lax --nbval-current-env \
  --nbval-sanitize-with tests/sanitize.cfg $(xdist 8) ${NBVAL:-notebooks/} &
wait
grep -E "PASSED|FAILED|ERROR" "$OUT/nbval_lax.txt" >"$OUT/nbval_cells.log"
step summarize 60 $PY tools/gpu_runs.py summarize "$OUT"
# One log back: each step's verdict, then the tail of its output.
for f in "$OUT"/*.txt; do echo "##### $(basename "$f")"; tail -c 6000 "$f"; done >>"$LOG"
rm -f "$OUT"/*.txt
if grep -q "^=== .*: rc [1-9]" "$LOG"; then echo "gpu_check: a step failed (see $LOG)"; exit 1; fi
echo "gpu_check: every step passed; take it in with: python tools/gpu_runs.py take $OUT"
