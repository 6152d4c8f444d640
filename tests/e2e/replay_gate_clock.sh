#!/usr/bin/env bash
# replay_gate_clock.sh - the gate times windows on the software device's modeled clock also when
# the program opens the driver itself with RTLD_LOCAL, as Python's CuPy, numba and PyTorch do
# (ctypes.CDLL here): the clock is looked up in the driver cufold loaded, not only in the
# process's global scope (replay/gate.c). On the wall clock of a device that interprets kernels
# on the CPU, the gate and the churn check judged windows by the simulator's own speed. replay
# layer.
source "$(dirname "$0")/lib.sh"
python3 -c 'import ctypes' 2>/dev/null || { echo "skip: python3 with ctypes is not available"; exit 77; }
cat >"$TMP/memsets.py" <<'PY'
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")  # RTLD_LOCAL: the driver's symbols stay out of the global scope
def ok(rc, what):
    if rc != 0:
        sys.exit("%s failed: %d" % (what, rc))
ok(cu.cuInit(0), "cuInit")
dev, ctx, buf = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
ok(cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(64 * 4096)), "cuMemAlloc")
for step in range(int(sys.argv[1])):
    for i in range(64):
        ok(cu.cuMemsetD32Async(ctypes.c_uint64(buf.value + 4096 * i), ctypes.c_uint(step * 64 + i),
                               ctypes.c_size_t(1024), None), "cuMemsetD32Async")
    ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
host = (ctypes.c_uint * (64 * 1024))()
ok(cu.cuMemcpyDtoH_v2(host, ctypes.c_uint64(buf.value), ctypes.c_size_t(64 * 4096)), "cuMemcpyDtoH")
print(sum(host) & 0xffffffff)
PY
run_plain "$TMP/plain.out" python3 "$TMP/memsets.py" 12 || fail "the ctypes program exited $? without cufold"
CUFOLD_REPORT="$TMP/r.json" run_cufold "$TMP/cufold.out" python3 "$TMP/memsets.py" 12 ||
	fail "the ctypes program exited $? with cufold"
cmp -s "$TMP/plain.out" "$TMP/cufold.out" || fail "output differs with cufold"
python3 - "$TMP/r.json" <<'PY' || fail "the gate did not use the modeled clock under a driver opened RTLD_LOCAL"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
clocks = {t["gate"]["clock"] for t in r["templates"] if t.get("gate")}
print("-- templates %d, gate clocks %s, ops replayed %d" % (len(r["templates"]), sorted(clocks), r["ops_replayed"]))
sys.exit(0 if r["templates"] and clocks == {"modeled"} else 1)
PY
note "the gate's clock is the software device's modeled one under a driver opened with RTLD_LOCAL"
