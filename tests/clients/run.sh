#!/usr/bin/env bash
# run.sh - real clients of the driver API under cufold (make test-clients): tests/clients/train.py,
# a cuda-python + NVRTC training loop, and tests/clients/numba_train.py, a numba-cuda one (self-
# checked against a host reference), whose kernels have no twins (the software device interprets
# their PTX), run with and without cufold over schedule seeds (20; numba's 5, each run compiles):
# identical output, and steady-state steps replayed as graphs. Needs make deps-clients (from PyPI
# into $CLIENTS_VENV) and the toolkit's NVRTC and NVVM (/usr/local/cuda). tests layer.
source "$(dirname "$0")/../e2e/lib.sh"
py=${CLIENTS_VENV:-$B/clients-venv}/bin/python
[[ -x $py ]] || fail "$py not found: run make deps-clients"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:${CUDA_HOME:-/usr/local/cuda}/lib64"

same_output_over_seeds "$py" tests/clients/train.py 12
CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$py" tests/clients/train.py 20 || fail "train.py exited $?"
python3 - "$TMP/report.json" <<'PY' || fail "train.py was not replayed"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
print("train.py, 20 steps: %d windows replayed in %d graph launches carrying %d ops"
      % (sum(t["windows_replayed"] for t in r["templates"]), r["graph_launches"], r["ops_replayed"]))
sys.exit(0 if r["ops_replayed"] > 0 else 1)
PY
note "cuda-python client: identical with and without cufold over $SEEDS seeds, replayed"

export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SEEDS=5 same_output_over_seeds "$py" tests/clients/numba_train.py 12
CUFOLD_REPORT="$TMP/numba.json" run_cufold "$TMP/nout" "$py" tests/clients/numba_train.py 20 2>/dev/null ||
	fail "numba_train.py exited $?"
python3 - "$TMP/numba.json" <<'PY' || fail "numba_train.py was not replayed"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
print("numba_train.py, 20 steps: %d windows replayed in %d graph launches carrying %d ops"
      % (sum(t["windows_replayed"] for t in r["templates"]), r["graph_launches"], r["ops_replayed"]))
sys.exit(0 if r["ops_replayed"] > 0 else 1)
PY
note "numba-cuda client: identical with and without cufold over 5 seeds, replayed"
