#!/usr/bin/env bash
# replay_gate_books.sh - the gate's books (replay/gate.c): a window a template build ran in gives
# no sample, so the eager time per window the gate compares is eager execution's own; the builds
# are a line of their own (gate.builds, build_ns, build_ns_per_window: build_ns spread over 1024
# windows); a trial left with no eager sample (CUFOLD_WARMUP=1: the only eager window ran the
# build) runs one window eagerly and decides. Before, the build's whole time was taken out of the
# window whose close ran it although the build overlapped the device work that window's closing
# synchronization waited for: rpl_loop train with +2 us kernels (device-bound) had its eager
# figure at 141.0 us against eager execution's 156.6 us a step. replay layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export SIMCUDA_KERNEL_NS=2000

for n in 10 20; do
	SIMCUDA_STATS="$TMP/eager.$n.stats" run_plain "$TMP/eager.$n.out" "$prog" train $n || fail "eager run exited $?"
done
run() { # name env...: 20 steps with the report
	local name=$1; shift
	env "$@" CUFOLD_REPORT="$TMP/$name.json" LD_PRELOAD="$CUFOLD" "$prog" train 20 >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err"; fail "$name exited $?"; }
	cmp -s "$TMP/eager.20.out" "$TMP/$name.out" || fail "$name: output differs from eager"
}
run books
run warm1 CUFOLD_WARMUP=1
python3 - "$TMP" <<'PY' || fail "the gate's books are not eager execution's time plus a build line"
import json, os, sys
d = sys.argv[1]
def modeled(n): return json.load(open(os.path.join(d, "eager.%d.stats" % n)))["modeled"]["total_ns"]
def gate(n): return json.load(open(os.path.join(d, n + ".json")))["replay"]["templates"][0]["gate"]
step = (modeled(20) - modeled(10)) / 10.0
g = gate("books")
print("eager execution %.1f us a step; the gate's eager figure %.1f us (%d samples), replayed %.1f us"
      % (step / 1e3, g["eager_ns_per_window"] / 1e3, g["eager_samples"], g["replayed_ns_per_window"] / 1e3))
if abs(g["eager_ns_per_window"] - step) > 0.01 * step:
    sys.exit("the gate's eager figure %d ns is not eager execution's %d ns a step" % (g["eager_ns_per_window"], step))
print("%d build(s), %.1f us, %d ns a window" % (g["builds"], g["build_ns"] / 1e3, g["build_ns_per_window"]))
if g["builds"] != 1 or g["build_ns"] <= 0 or g["build_ns_per_window"] != g["build_ns"] // 1024:
    sys.exit("no build line: %s" % g)
w = gate("warm1")
print("CUFOLD_WARMUP=1: %s after %d eager sample(s), decided at sighting %d" % (w["state"], w["eager_samples"],
      w["decided_at_sighting"]))
if w["state"] == "trial" or w["eager_samples"] < 1 or abs(w["eager_ns_per_window"] - step) > 0.01 * step:
    sys.exit("a trial without an eager sample did not get one and decide: %s" % w)
PY
note "the gate's eager figure is eager execution's step time; builds are their own line"
