#!/usr/bin/env bash
# run.sh - real clients of the driver API under cufold (make test-clients): tests/clients/train.py,
# a cuda-python + NVRTC training loop, tests/clients/numba_train.py, a numba-cuda one (self-
# checked against a host reference), and the CuPy programs tests/clients/cupy_*.py, whose kernels
# have no twins (the software device interprets their PTX), run with and without cufold over
# schedule seeds (20; numba's 5, each run compiles; CuPy's towers 20, the others 5): identical
# output, steady-state steps replayed as graphs (CuPy: replay share and submissions per step
# printed). Needs make deps-clients (from PyPI
# into $CLIENTS_VENV) and the toolkit's NVRTC and NVVM (/usr/local/cuda). tests layer.
source "$(dirname "$0")/../e2e/lib.sh"
py=${CLIENTS_VENV:-$B/clients-venv}/bin/python
[[ -x $py ]] || fail "$py not found: run make deps-clients"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:${CUDA_HOME:-/usr/local/cuda}/lib64"
# CLIENTS="cupy" (a subset of "cuda-python numba cupy") runs only those clients
want() { [[ " ${CLIENTS:-cuda-python numba cupy} " == *" $1 "* ]]; }

if want cuda-python; then
same_output_over_seeds "$py" tests/clients/train.py 12
CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$py" tests/clients/train.py 20 || fail "train.py exited $?"
python3 - "$TMP/report.json" <<'PY' || fail "train.py was not replayed"
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["replay"]
print("train.py, 20 steps: %d windows replayed in %d graph launches carrying %d ops (%.1f %% of %d)"
      % (sum(t["windows_replayed"] for t in r["templates"]), r["graph_launches"], r["ops_replayed"],
         100.0 * r["ops_replayed"] / max(1, doc["totals"]["ops"]), doc["totals"]["ops"]))
sys.exit(0 if r["ops_replayed"] > 0 else 1)
PY
note "cuda-python client: identical with and without cufold over $SEEDS seeds, replayed"
fi

if want numba; then
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SEEDS=5 same_output_over_seeds "$py" tests/clients/numba_train.py 12
CUFOLD_REPORT="$TMP/numba.json" run_cufold "$TMP/nout" "$py" tests/clients/numba_train.py 20 2>/dev/null ||
	fail "numba_train.py exited $?"
python3 - "$TMP/numba.json" <<'PY' || fail "numba_train.py was not replayed"
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["replay"]
print("numba_train.py, 20 steps: %d windows replayed in %d graph launches carrying %d ops (%.1f %% of %d)"
      % (sum(t["windows_replayed"] for t in r["templates"]), r["graph_launches"], r["ops_replayed"],
         100.0 * r["ops_replayed"] / max(1, doc["totals"]["ops"]), doc["totals"]["ops"]))
sys.exit(0 if r["ops_replayed"] > 0 else 1)
PY
note "numba-cuda client: identical with and without cufold over 5 seeds, replayed"
fi
want cupy || exit 0

# CuPy (tests/clients/cupy_*.py, as CuPy users write programs): CuPy compiles its kernels with
# NVRTC; CUPY_COMPILE_WITH_PTX=1 makes it load them as PTX (the device runs PTX only), with its
# on-disk kernel cache in this test's folder. CUPY_ACCELERATORS= keeps whole-array reductions in
# CuPy's own kernels; its default (cub) runs the bundled CUB kernels, PTX for compute_120 only,
# which load with SIMCUDA_CC=120 (checked last).
export CUPY_COMPILE_WITH_PTX=1 CUPY_ACCELERATORS= CUPY_CACHE_DIR="$TMP/cupy-cache"

# steady_cufold_counts NAME prog args...: the per-step figures difference a short and a long run,
# which assumes both warm up alike. CuPy's pool picks among free chunks by the Python objects'
# addresses (ASLR), so now and then a step's temporaries land elsewhere than the step the template
# was planned from: a rewrite guard fails, the template is planned again two windows later, and
# that run carries about two eager steps more (results stay identical; 1 run in 15-25). Such a
# run (a GUARD fallback in its report) is run again, up to twice, so the figures describe the
# steady state; the third try's figures stand, and a non-positive one fails in cupy_figures.
steady_cufold_counts() {
	local name=$1 n try a
	shift
	for n in $STEPS_SHORT $STEPS_LONG; do
		for try in 1 2; do
			python3 -c 'import json,sys; sys.exit(1 if json.load(open(sys.argv[1]))["replay"]["fallbacks"].get("GUARD") else 0)' \
				"$TMP/$name.$n.report" && break
			note "$name ($n steps): a rewrite guard failed during warm-up (CuPy's pool moved a temporary); run again"
			local args=()
			for a in "$@"; do args+=("${a//@STEPS@/$n}"); done
			SIMCUDA_STATS=$TMP/$name.$n.stats CUFOLD_REPORT=$TMP/$name.$n.report \
				run_cufold "$TMP/$name.$n.out" "${args[@]}" || fail "${args[*]} exited $? with cufold"
		done
	done
}

# cupy_figures NAME [MIN_SHARE MIN_FACTOR]: replay share of the long run and host submissions per
# step (steps 6..16) eager and under cufold, printed; with the minimums, asserted (issue 21's
# targets for the towers: >= 80 % of ops replayed, >= 5x fewer submissions per step). Kernels
# executed per step, eager and under cufold (issue 24: batch-kernel's fusion), printed.
cupy_figures() {
	local eager cufold
	eager=$(per_step "$1.plain" host_submissions) && cufold=$(per_step "$1.cufold" host_submissions) ||
		fail "$1: cannot read the counters"
	note "$1: kernels executed per step: eager $(per_step "$1.plain" kernels_executed), cufold $(per_step "$1.cufold" kernels_executed)"
	python3 - "$TMP/$1.cufold.$STEPS_LONG.report" "$1" "$eager" "$cufold" "${2:-0}" "${3:-0}" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
ops, rep = r["totals"]["ops"], r["replay"]["ops_replayed"]
closed = {k: v["windows_closed"] for k, v in r["boundaries"].items() if v["windows_closed"]}
print("-- %s: %.1f %% of ops replayed (%d of %d); host submissions per step: eager %s, cufold %s;"
      " windows closed by %s" % (sys.argv[2], 100.0 * rep / ops if ops else 0, rep, ops,
                                 sys.argv[3], sys.argv[4], closed))
apart, ren = {}, {}
for t in r["replay"]["templates"]:
    for key, into in (("kernels_apart", apart), ("renamable", ren)):
        for k, v in ((t.get("rewrite") or {}).get(key) or {}).items():
            into[k] = into.get(k, 0) + v
if apart.get("memory_reused") or ren.get("renamed"):
    print("-- %s: writing elsewhere: %d launches write cufold's buffers (%d bytes, %d copied back); %d still kept"
          " apart by reused memory, of which the analysis passes %d" % (sys.argv[2], ren.get("renamed", 0),
          ren.get("renamed_bytes", 0), ren.get("copied_back", 0), apart.get("memory_reused", 0), ren.get("launches", 0)))
if float(sys.argv[3]) <= 0 or float(sys.argv[4]) <= 0:
    print("-- %s: a per-step figure is not positive (eager %s, cufold %s): the two runs did not warm up alike"
          % (sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(1)
share, factor = 100.0 * rep / ops if ops else 0, float(sys.argv[3]) / float(sys.argv[4])
if share < float(sys.argv[5]) or factor < float(sys.argv[6]):
    print("-- %s: below its target (%.1f %% < %s %% or %.1fx < %sx fewer submissions)"
          % (sys.argv[2], share, sys.argv[5], factor, sys.argv[6]))
    sys.exit(1)
PY
		fail "$1: replay below its target"
}

# NAME:SCRIPT[:FEATURES]; towers6 is the towers program with 6 features. The 16-feature towers are held to
# issue 21's targets; optim and reduce read a value back after almost every kernel (their windows
# are a few ops long), so their figures are printed only.
for spec in towers:towers towers6:towers:6 optim:optim reduce:reduce; do
	IFS=: read -r prog script extra <<<"$spec"
	seeds=5
	[[ $prog == towers ]] && seeds=20
	SEEDS=${CUPY_SEEDS:-$seeds} same_output_over_seeds "$py" tests/clients/cupy_$script.py 8 $extra
	count_steps cupy_$prog.plain plain "$py" tests/clients/cupy_$script.py @STEPS@ $extra
	count_steps cupy_$prog.cufold cufold "$py" tests/clients/cupy_$script.py @STEPS@ $extra
	steady_cufold_counts cupy_$prog.cufold "$py" tests/clients/cupy_$script.py @STEPS@ $extra
	cmp -s "$TMP/cupy_$prog.plain.$STEPS_LONG.out" "$TMP/cupy_$prog.cufold.$STEPS_LONG.out" ||
		fail "cupy_$script.py $extra: output differs with cufold ($STEPS_LONG steps)"
	if [[ $prog == towers ]]; then cupy_figures cupy_$prog 80 5; else cupy_figures cupy_$prog; fi
	note "CuPy $prog: identical with and without cufold over ${CUPY_SEEDS:-$seeds} seeds"
done

# The silent 0.0 of issue 21: with CuPy's default CUB accelerator, a device that refuses the
# compute_120 image makes cub::DeviceReduce fail, CuPy's cupy_cub.cu drops the error, and the
# program reads whatever the output held. The device says so on stderr (cufold passes the
# driver's error through unchanged); with SIMCUDA_CC=120 the CUB kernels load and run.
CUPY_ACCELERATORS=cub SIMCUDA_CC=120 run_plain "$TMP/cub.out" "$py" tests/clients/cupy_reduce.py 3 2>"$TMP/cub.err" ||
	fail "cupy_reduce.py with CUB (SIMCUDA_CC=120) exited $?"
CUPY_ACCELERATORS=cub SIMCUDA_CC=120 run_cufold "$TMP/cub.cf" "$py" tests/clients/cupy_reduce.py 3 2>/dev/null ||
	fail "cupy_reduce.py with CUB under cufold exited $?"
cmp -s "$TMP/cub.out" "$TMP/cub.cf" || fail "cupy_reduce.py with CUB: output differs with cufold"
run_plain "$TMP/nocub.out" "$py" tests/clients/cupy_reduce.py 3 || fail "cupy_reduce.py exited $?"
python3 - "$TMP/cub.out" "$TMP/nocub.out" <<'PY' || fail "CUB reductions (SIMCUDA_CC=120) do not match CuPy's own"
import sys
a, b = ([[float(x) for x in l.split()[2:]] for l in open(p) if l.startswith("step")] for p in sys.argv[1:])
ok = len(a) == len(b) == 3 and all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
sys.exit(0 if ok else 1)
PY
CUPY_ACCELERATORS=cub run_plain "$TMP/cub90.out" "$py" tests/clients/cupy_reduce.py 1 2>"$TMP/cub90.err" || true
grep -q "newer than the device's 9.0.*SIMCUDA_CC" "$TMP/cub90.err" ||
	fail "CUB image refused at 9.0 without saying so on stderr: $(cat "$TMP/cub90.err")"
note "CuPy with CUB: runs with SIMCUDA_CC=120 (identical with cufold, matches CuPy's own reductions); refused loudly at 9.0"
