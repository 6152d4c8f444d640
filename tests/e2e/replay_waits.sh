# replay_waits.sh - replay never waits on the device under the engine's mutex, and keeps no call
# while the program captures a stream. (1) Pageable copies replayed in graphs: with cufold the
# driver sees no more cuEventSynchronize / cuStreamSynchronize / cuCtxSynchronize calls than the
# program makes itself; a stage buffer the driver reports busy (cuEventQuery NOT_READY, injected)
# sends that launch eagerly (fallback BUSY), results unchanged over the seeds. (2) rpl_loop
# capjoin: a wait joins s2 to the program's capture of s1, and cuStreamIsCapturing(s2) must say
# so on every step (cufold must not keep the wait), outputs identical over the seeds. tests layer.
source "$(dirname "$0")/lib.sh"
[[ -x $B/progs/sample_train && -x $B/progs/rpl_loop && -f $CUFOLD ]] || fail "programs or $CUFOLD not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

# (1) no device waits of cufold's own
SIMCUDA_STATS=$TMP/plain.json run_plain "$TMP/p" "$B/progs/sample_train" 12 4 || fail "sample_train failed"
SIMCUDA_STATS=$TMP/cf.json CUFOLD_REPORT=$TMP/rep.json run_cufold "$TMP/c" "$B/progs/sample_train" 12 4 ||
	fail "sample_train failed with cufold"
cmp -s "$TMP/p" "$TMP/c" || fail "sample_train output differs with cufold"
python3 - "$TMP/plain.json" "$TMP/cf.json" "$TMP/rep.json" <<'PY' || fail "cufold waited on the device"
import json, sys
p, c = (json.load(open(a))["calls"] for a in sys.argv[1:3])
rep = json.load(open(sys.argv[3]))
for name in ("cuEventSynchronize", "cuStreamSynchronize", "cuCtxSynchronize", "cuCtxSynchronize_v2"):
    if c.get(name, 0) != p.get(name, 0):
        print("%s: %d calls with cufold, %d without" % (name, c.get(name, 0), p.get(name, 0)))
        sys.exit(1)
n = rep["replay"]["graph_launches"]
print("graph launches: %d" % n)
sys.exit(0 if n > 0 else 1)  # replay (and its stage buffers) did run
PY
# a busy stage buffer: that launch goes eagerly, nothing waits, results unchanged
SIMCUDA_FAIL=cuEventQuery:2:CUDA_ERROR_NOT_READY same_output_over_seeds "$B/progs/sample_train" 12 4
SIMCUDA_FAIL=cuEventQuery:2:CUDA_ERROR_NOT_READY CUFOLD_REPORT=$TMP/busy.json LD_PRELOAD=$CUFOLD \
	"$B/progs/sample_train" 12 4 >/dev/null 2>"$TMP/err" || fail "exited $?"
grep -q "replay: " "$TMP/err" && { cat "$TMP/err"; fail "a busy stage buffer is not a failure"; }
grep -q '"BUSY": [1-9]' "$TMP/busy.json" || { grep -o '"fallbacks": {[^}]*}' "$TMP/busy.json" | head -3; fail "no BUSY fallback"; }
note "no device waits under the lock; a busy stage buffer goes eagerly"

# (2) a wait joining a capture reaches the driver at once
same_output_over_seeds "$B/progs/rpl_loop" capjoin 8
run_cufold "$TMP/cj" "$B/progs/rpl_loop" capjoin 8 || fail "capjoin failed with cufold"
[[ $(grep -c "capture status 1" "$TMP/cj") == 8 ]] || { cat "$TMP/cj"; fail "s2 did not join the capture on every step"; }
note "capture joins are never kept"
