# rewrite_parallel.sh - the parallel rule end to end on tests/progs/rw_parallel.c (4 independent
# chains on one stream): results bit for bit the same as without cufold over 20 seeds at
# CUFOLD_OPT=2, with parallel alone and with batch-copy under it (the device's random scheduler
# runs graph nodes whose dependencies are met in random order, so a missing edge shows on some
# seed); bindings that move so that two unordered ops overlap fall back on a failed guard with
# the same results; the modeled device time is lower with parallel than without it for the same
# work. tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rw_parallel
[[ -x $prog ]] || fail "$prog is not built"
grep -aq 'parallel' "$CUFOLD" || fail "the parallel rule is not in $CUFOLD"
export CUFOLD_MODE=replay
# only parallel fires: batch-copy would put the memsets and copies of a stage into one node each,
# and batch-kernel the chains' launches of one kernel into one launch (the runs with every rule
# on, CUFOLD_RULES=, check them together)
ALONE=-batch-copy,-batch-kernel

CUFOLD_OPT=2 CUFOLD_RULES=$ALONE same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=2 CUFOLD_RULES= same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=2 CUFOLD_RULES=$ALONE same_output_over_seeds "$prog" moving 24
CUFOLD_OPT=2 CUFOLD_RULES= same_output_over_seeds "$prog" moving 24
# segments of 9 ops cut the chains: each segment is planned (and guarded) on its own
CUFOLD_OPT=2 CUFOLD_RULES= CUFOLD_SEGMENT=9 same_output_over_seeds "$prog" moving 24

# report: steady replays a template parallel rewrote, with no fallback; moving retires it on a
# failed guard (only parallel fired, so the guard was one of its independent guards)
CUFOLD_OPT=2 CUFOLD_RULES=$ALONE CUFOLD_REPORT=$TMP/steady.json run_cufold /dev/null "$prog" steady 12 ||
	fail "steady report run exited $?"
CUFOLD_OPT=2 CUFOLD_RULES=$ALONE CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 ||
	fail "moving report run exited $?"
CUFOLD_OPT=1 CUFOLD_RULES= CUFOLD_REPORT=$TMP/opt1.json run_cufold /dev/null "$prog" steady 12 ||
	fail "CUFOLD_OPT=1 report run exited $?"
grep -q 'a rewrite guard failed' "$TMP/moving.json" || fail "no template retired by a failed guard in the moving run"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the failed guard was not counted as a GUARD fallback"
python3 - "$TMP" <<'PY' || fail "the reports do not show the parallel rewrite as expected"
import json, os, sys
d = sys.argv[1]
def replay(n): return json.load(open(os.path.join(d, n)))["replay"]
def fired(r):
    out = {}
    for t in r["templates"]:
        for k, v in t["rewrite"]["rules"].items():
            out[k] = out.get(k, 0) + v
    return out
s, m, o1 = replay("steady.json"), replay("moving.json"), replay("opt1.json")
print("steady: rules %s, fallbacks %s, launches %s" % (fired(s), s["fallbacks"], [t["launches"] for t in s["templates"]]))
print("moving: rules %s, fallbacks %s" % (fired(m), m["fallbacks"]))
fails = []
# at most once per segment (segments start small; the rule's pairs do not keep them whole)
nseg = sum(len(t["segment_launches"]) for t in s["templates"])
if set(fired(s)) != {"parallel"} or not 1 <= fired(s)["parallel"] <= nseg:
    fails.append("steady: rules fired %s, expected parallel, at most once per segment (%d)" % (fired(s), nseg))
if any(s["fallbacks"].values()):
    fails.append("steady: fallbacks %s" % s["fallbacks"])
if not any(t["rewrite"]["rules"].get("parallel") and t["launches"] >= 8 for t in s["templates"]):
    fails.append("steady: the parallel template was not replayed on the steady steps")
if set(fired(m)) != {"parallel"}:
    fails.append("moving: rules fired %s, expected parallel only" % fired(m))
if "parallel" in fired(o1):
    fails.append("CUFOLD_OPT=1: parallel fired (it is level 2)")
if fails:
    sys.exit("\n".join(fails))
PY
note "steady: parallel's template replayed; moving: a GUARD fallback, template retired"

# modeled device time, the same work: independent graph nodes overlap in the device model
modeled() { # name rules
	SIMCUDA_STATS=$TMP/$1.stats CUFOLD_OPT=2 CUFOLD_RULES=$2 run_cufold "$TMP/$1.out" "$prog" steady 12 ||
		fail "rw_parallel steady 12 exited $? with CUFOLD_RULES=$2"
}
modeled alone "$ALONE"; modeled alone_off "$ALONE,-parallel"
# (with batch-copy; batch-kernel off: it runs the chains' launches of one kernel as one launch,
# which leaves parallel nothing to overlap)
modeled all "-batch-kernel"; modeled all_off "-parallel,-batch-kernel"
SIMCUDA_STATS=$TMP/plain.stats run_plain "$TMP/plain.out" "$prog" steady 12 || fail "plain run exited $?"
python3 - "$TMP" <<'PY' || fail "the modeled device time does not show the chains overlapping"
import json, os, sys
d = sys.argv[1]
def st(n): return json.load(open(os.path.join(d, n + ".stats")))
def out(n): return open(os.path.join(d, n + ".out")).read()
fails = []
for on, off, label in (("alone", "alone_off", "parallel alone"), ("all", "all_off", "with batch-copy")):
    a, b = st(on), st(off)
    ta, tb = a["modeled"]["device_end_ns"], b["modeled"]["device_end_ns"]
    print("%s: device_end_ns %d with parallel, %d without (%.2fx)" % (label, ta, tb, tb / ta))
    if out(on) != out("plain") or out(off) != out("plain"):
        fails.append("%s: output differs from the plain run" % label)
    # the same work executed either way
    for key in ("copies_executed", "memsets_executed"):
        if a["totals"][key] != b["totals"][key]:
            fails.append("%s: %s %s with parallel, %s without" % (label, key, a["totals"][key], b["totals"][key]))
    if a["kernels"] != b["kernels"]:
        fails.append("%s: kernels executed %s with parallel, %s without" % (label, a["kernels"], b["kernels"]))
    # 4 chains side by side in 9 of 12 steps: at least 15 % off the whole run's device time
    if not ta < 0.85 * tb:
        fails.append("%s: device_end_ns %d with parallel is not below 0.85 x %d without" % (label, ta, tb))
if fails:
    sys.exit("\n".join(fails))
PY
note "modeled device time lower with parallel than with CUFOLD_RULES=-parallel, same work"
