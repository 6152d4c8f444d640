# sim_stats.sh - SIMCUDA_STATS counts exactly what a program did, and SIMCUDA_FAIL fails exactly
# the call it names. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/sample_train
steps=3 params=5
SIMCUDA_STATS=$TMP/s.json $prog $steps $params >$TMP/out || fail "sample_train exited $?"
python3 - "$TMP/s.json" $steps $params <<'PY' || fail "stats do not match the program"
import json, sys
s = json.load(open(sys.argv[1])); steps = int(sys.argv[2]); params = int(sys.argv[3])
c, t = s["calls"], s["totals"]
def eq(what, got, want):
    if got != want:
        sys.exit("%s: got %s, expected %s" % (what, got, want))
launches = params + steps * (3 + 3 * params)          # fills; gemm, relu, reduce; 3 per parameter
eq("cuLaunchKernel calls", c.get("cuLaunchKernel"), launches)
eq("kernel launches", t["kernel_launches"], launches)
eq("kernels executed", t["kernels_executed"], launches)
eq("relu executed", s["kernels"].get("relu"), steps)
eq("cuMemsetD32Async_v2 calls", c.get("cuMemsetD32Async"), steps * params)
eq("memsets executed", t["memsets_executed"], steps * params)
eq("bytes set", t["bytes_set"], steps * params * 256 * 4)
d2d = steps * 16
eq("cuMemcpyDtoDAsync_v2 calls", c.get("cuMemcpyDtoDAsync_v2"), d2d)
copies = 1 + steps * (1 + 16 + 1) + params + 1        # weights; per step H2D, 16 D2D, loss; final hashes
eq("copies executed", t["copies_executed"], copies)
n_in = 32 * 64 * 4
eq("bytes copied", t["bytes_copied"], 64 * 64 * 4 + steps * (n_in + 2 * n_in + 4) + params * 256 * 4 + n_in)
subs = sum(v for k, v in s["submissions"].items())
eq("host submissions", t["host_submissions"], subs)
eq("calls total", t["calls"], sum(c.values()))
assert s["modeled"]["total_ns"] > 0, "no modeled time"
assert t["device_cpu_ns"] > 0, "no time inside the device's calls"
assert t["graph_launches"] == 0
print("stats match: %d launches, %d copies" % (launches, copies))
PY
# the peak of device memory in use: copy_loop's pool (3 x 2 x 52 buffers of 1 KiB) and its
# scratch word (one 256-byte span), both live at once though freed before the program exits
SIMCUDA_STATS=$TMP/p.json $B/progs/copy_loop fixed 2 >/dev/null || fail "copy_loop exited $?"
python3 - "$TMP/p.json" <<'PY' || fail "the device memory peak is not the program's"
import json, sys
got = json.load(open(sys.argv[1]))["totals"]["device_memory_peak_bytes"]
want = 3 * 2 * 52 * 1024 + 256
if got != want:
    sys.exit("device_memory_peak_bytes: got %s, expected %s" % (got, want))
PY
# fault injection: the 2nd cuMemAlloc fails with the named error, nothing else does
if SIMCUDA_FAIL=cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY $prog 1 1 >$TMP/o 2>$TMP/e; then
	fail "program succeeded although its 2nd cuMemAlloc was made to fail"
fi
grep -q "cuMemAlloc(&dense.*CUDA_ERROR_OUT_OF_MEMORY" $TMP/e || { cat $TMP/e; fail "wrong call failed"; }
SIMCUDA_FAIL=cuMemAlloc:2000 $prog 1 1 >/dev/null || fail "a rule beyond the calls made must change nothing"
note "stats and fault injection ok"
