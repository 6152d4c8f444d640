#!/usr/bin/env bash
# sim_cudart_train.sh - the unmodified CUDA runtime on the software device: tests/cudart/train.cu,
# built by plain nvcc with the shared and the static cudart and with --default-stream
# per-thread, runs its own discovery (cuGetProcAddress, the private export tables), registers
# its default fat binary and trains; under cufold its output is bit for bit the same over 20
# seeds, the steady-state steps replay as graphs, and cufold's report counts exactly the kernel
# launches the device counted (none bypasses cufold). tests/cudart/graph.cu, which captures its
# own step with cudaStreamBeginCapture and launches the graph, is identical with cufold too.
# tests layer.
source "$(dirname "$0")/lib.sh"

steps=12
for v in shared static ptds; do
	prog="$B/cudart/train-$v"
	[[ -x $prog ]] || fail "$prog is not built"
	same_output_over_seeds "$prog" $steps
	grep -q "^step $((steps - 1)) loss " "$TMP/plain.1" || fail "train-$v did not run its $steps steps"
	# the three builds compute the same thing
	cp "$TMP/plain.1" "$TMP/result.$v"
	cmp -s "$TMP/result.shared" "$TMP/result.$v" || fail "train-$v's results differ from train-shared's"

	# replay: windows replayed as graphs after warm-up; every launch counted on both sides
	SIMCUDA_STATS="$TMP/stats.$v" CUFOLD_REPORT="$TMP/report.$v" run_cufold "$TMP/out.$v" "$prog" $steps ||
		fail "train-$v exited $? with cufold"
	disagree="train-$v: cufold's report and the device's counters disagree"
	python3 - "$TMP/stats.$v" "$TMP/report.$v" "$v" <<'PY' || fail "$disagree"
import json, sys
stats, report, v = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
r = report["replay"]
print("train-%s: %d graph launches, %d ops replayed; kernels: device %s, cufold %s" %
      (v, r["graph_launches"], r["ops_replayed"], stats["totals"]["kernels_executed"],
       report["totals"]["launches"]))
if r["graph_launches"] <= 0 or r["ops_replayed"] <= 0:
    sys.exit("nothing replayed")
if stats["kernels"] != report["launches_by_kernel"]:
    sys.exit("kernels by name: device %s, cufold %s" % (stats["kernels"], report["launches_by_kernel"]))
if stats["totals"]["kernels_executed"] != report["totals"]["launches"]:
    sys.exit("kernel count differs")
# the runtime went through its private tables and registered its fatbin with the library API
calls = stats["calls"]
for name in ("cuGetExportTable", "cuLibraryLoadData", "cuLibraryGetKernel"):
    if not calls.get(name):
        sys.exit("the runtime never called %s" % name)
PY
done

# no slot the runtime needs is missing (the tool slots, which it may call and whose answer it
# ignores, are left out: tests/simcuda/export_tables.c)
for prog in train-shared graph-static; do
	run_plain /dev/null "$B/cudart/$prog" 3 2>"$TMP/slots.err" || fail "$prog failed"
	! grep 'export table' "$TMP/slots.err" | grep -v 'export table tools-' ||
		fail "$prog called an export-table slot the device does not implement"
done

# the runtime's integrity check hashes every device: it must pass with several
SIMCUDA_DEVICES=4 run_plain "$TMP/devices4" "$B/cudart/train-static" $steps || fail "train-static fails with 4 devices"
cmp -s "$TMP/result.shared" "$TMP/devices4" || fail "train-static's results differ with 4 devices"

# a program's own stream capture, through the runtime, left to the program
for v in shared static ptds; do
	prog="$B/cudart/graph-$v"
	[[ -x $prog ]] || fail "$prog is not built"
	same_output_over_seeds "$prog" 6
	grep -q '^step 5 loss ' "$TMP/plain.1" || fail "graph-$v did not run its 6 steps"
	grep -q '^callbacks 0 1 2 3 4 5$' "$TMP/plain.1" || fail "graph-$v: stream callbacks did not run in order"
done
SIMCUDA_STATS="$TMP/gstats" run_plain /dev/null "$B/cudart/graph-static" 6 || fail "graph-static failed"
python3 - "$TMP/gstats" <<'PY' || fail "graph-static did not launch its captured graph"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
if t["graph_launches"] != 6 or t["kernels_executed"] != 24:
    sys.exit("graph launches %d, kernels %d (want 6, 24)" % (t["graph_launches"], t["kernels_executed"]))
PY

# the per-thread build reached the _ptsz entry points, the legacy ones the plain ones
CUFOLD_MODE=trace CUFOLD_LOG=debug run_cufold /dev/null "$B/cudart/train-ptds" 2 2>"$TMP/ptds.err" ||
	fail "train-ptds trace run failed"
grep -q 'calls cuLaunchKernel_ptsz [0-9]' "$TMP/ptds.err" ||
	fail "per-thread launches did not reach cuLaunchKernel_ptsz"
SIMCUDA_STATS="$TMP/legacy.stats" CUFOLD_MODE=trace CUFOLD_LOG=debug run_cufold /dev/null "$B/cudart/train-shared" 2 \
	2>"$TMP/legacy.err" || fail "train-shared trace run failed"
grep -q 'calls cuLaunchKernel [0-9]' "$TMP/legacy.err" || fail "legacy launches did not reach cuLaunchKernel"
# cuGetExportTable goes through cufold's generated hook to the driver, every call of it
hooked=$(sed -n 's/.*calls cuGetExportTable \([0-9]*\)$/\1/p' "$TMP/legacy.err")
device=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["calls"]["cuGetExportTable"])' \
	"$TMP/legacy.stats")
[[ -n $hooked && $hooked == "$device" ]] ||
	fail "cuGetExportTable: $hooked calls through cufold, $device at the device"
note "nvcc-built runtime programs: identical with cufold, replayed, launches agree"
