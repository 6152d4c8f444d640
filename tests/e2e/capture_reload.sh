#!/usr/bin/env bash
# capture_reload.sh - capture stays right and bounded where it once was not
# (tests/progs/cap_reload): a module loaded and unloaded every step does not make the launched
# kernel a new one (one window shape, no extra driver calls per step); copies the driver refuses
# are never part of a shape; thousands of short-lived threads do not grow cufold's memory;
# cuLibraryEnumerateKernels with a larger array than the library has kernels adds no stale
# entries to capture's CUkernel set.
# Output identical with and without cufold. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cap_reload"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
SEEDS=4 same_output_over_seeds "$prog" reload 6
SEEDS=4 same_output_over_seeds "$prog" badcopy

report() { # name args...: run in trace mode, report to $TMP/name.json
	local name=$1; shift
	CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/$name.json" run_cufold "$TMP/$name.out" "$prog" "$@" ||
		fail "cap_reload $* failed with cufold"
}

# --- a module unloaded every step
report reload10 reload 10
report reload20 reload 20
report keep10 keep 10
report keep20 keep 20
python3 - "$TMP"/reload10.json "$TMP"/reload20.json "$TMP"/keep10.json "$TMP"/keep20.json <<'PY' || fail "an unrelated module unload changed the kernel's identity"
import json, sys
r10, r20, k10, k20 = (json.load(open(p)) for p in sys.argv[1:])
fills = [s for s in r20["shapes"] if s["kernels"] == {"fill": 1} and s["ops"] == 1]
# 19: the first step's fill shares its window with the set-up memset (loading modules ends none)
if len(fills) != 1 or fills[0]["sightings"] != 19:
    sys.exit("fill windows: %s" % [(s["id"], s["ops"], s["kernels"], s["sightings"]) for s in r20["shapes"]])
own = lambda r: r["totals"]["driver_calls_own"]
# what capture asks the driver per step, beyond what a program that never unloads costs
extra = (own(r20) - own(r10)) - (own(k20) - own(k10))
if extra != 0:
    sys.exit("%d extra driver calls over 10 steps with an unload each step (%d, %d vs %d, %d)"
             % (extra, own(r10), own(r20), own(k10), own(k20)))
if r20["memory"]["cufold_host_bytes"] > r10["memory"]["cufold_host_bytes"] + 4096:
    sys.exit("memory grows with steps: %d -> %d" % (r10["memory"]["cufold_host_bytes"], r20["memory"]["cufold_host_bytes"]))
print("-- one shape seen in every step after the first; driver calls per step as without unloads")
PY
note "unloading an unrelated module keeps kernels' identity"

# --- refused copies
report badcopy badcopy
grep -q "refused=3" "$TMP/badcopy.out" || fail "the software device accepted the bad copies: $(cat "$TMP/badcopy.out")"
python3 - "$TMP/badcopy.json" <<'PY' || fail "refused copies are in the report's shapes"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
memcpy_in_shapes = sum(s["ops_by_kind"].get("memcpy", 0) * s["sightings"] for s in r["shapes"])
# the one accepted cuMemcpyDtoH at the end is the only copy
if t["ops_by_kind"]["memcpy"] != 1 or memcpy_in_shapes > 1:
    sys.exit("memcpy ops: totals %d, in shapes %d" % (t["ops_by_kind"]["memcpy"], memcpy_in_shapes))
print("-- refused copies recorded in no window")
PY
note "copies the driver refuses are dropped"

# --- short-lived threads
report threads500 threads 500
report threads5000 threads 5000
python3 - "$TMP/threads500.json" "$TMP/threads5000.json" <<'PY' || fail "memory grows with short-lived threads"
import json, sys
a, b = (json.load(open(p))["memory"]["cufold_host_bytes"] for p in sys.argv[1:])
if b > a + 64 * 1024:
    sys.exit("cufold holds %d bytes after 500 threads, %d after 5000" % (a, b))
print("-- %d bytes after 500 threads, %d after 5000" % (a, b))
PY
note "short-lived threads do not grow cufold's memory"

# --- cuLibraryEnumerateKernels(k, n) with n above the count
SEEDS=2 same_output_over_seeds "$prog" enumerate 3
report enumerate enumerate 5
python3 - "$TMP/enumerate.json" <<'PY' || fail "entries the driver did not fill were taken as CUkernel handles"
import json, sys
r = json.load(open(sys.argv[1]))
opaque = r["boundaries"]["OPAQUE"]["calls"]
# every step's fill recorded (the first shares its window with the set-up memset: loading a
# library ends no window)
fills = sum(s["sightings"] for s in r["shapes"] if s["kernels"] == {"fill": 1})
if opaque or fills != 5:
    sys.exit("fill launches not recorded: %d opaque; shapes %s" % (opaque, [(s["ops"], s["kernels"], s["sightings"]) for s in r["shapes"]]))
print("-- the function launched every step is recorded, 5 sightings")
PY
note "cuLibraryEnumerateKernels adds only the entries the driver filled"
