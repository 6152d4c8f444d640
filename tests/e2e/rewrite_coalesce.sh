# rewrite_coalesce.sh - the coalesce rule end to end: results bit for bit the same as without
# cufold over 20 seeds at CUFOLD_OPT=1 (steady buffers, and buffers that move so that guards
# fail mid-run) and at CUFOLD_OPT=0; the device's own counters show the 8 slice copies of a
# step executed as 1 at CUFOLD_OPT=1, as 8 at CUFOLD_OPT=0 and with CUFOLD_RULES=-coalesce,-batch-copy
# (without coalesce alone, batch-copy takes the 8 copies into one launch of its kernel).
# tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rw_coalesce
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay

CUFOLD_OPT=1 same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=1 same_output_over_seeds "$prog" moving 24
# the moving run took the guard path: a template was retired because a guard failed
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -q 'a rewrite guard failed' "$TMP/moving.json" || fail "no template retired by a failed guard in the moving run"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the failed guard was not counted as a GUARD fallback"
CUFOLD_OPT=0 same_output_over_seeds "$prog" moving 24

# copies executed in runs of 6 and 16 steps: the difference is 10 steady-state steps
copies() { # out opt steps [rules]
	SIMCUDA_STATS=$1 CUFOLD_OPT=$2 CUFOLD_RULES=${4:-} CUFOLD_REPORT=$1.report run_cufold /dev/null "$prog" steady "$3" ||
		fail "rw_coalesce steady $3 exited $?"
}
copies "$TMP/o1a" 1 6; copies "$TMP/o1b" 1 16
copies "$TMP/o0a" 0 6; copies "$TMP/o0b" 0 16
copies "$TMP/ofa" 1 6 -coalesce,-batch-copy; copies "$TMP/ofb" 1 16 -coalesce,-batch-copy
copies "$TMP/oba" 1 6 -coalesce; copies "$TMP/obb" 1 16 -coalesce
SIMCUDA_STATS=$TMP/pa run_plain /dev/null "$prog" steady 6 || fail "plain run exited $?"
SIMCUDA_STATS=$TMP/pb run_plain /dev/null "$prog" steady 16 || fail "plain run exited $?"
python3 - "$TMP" <<'PY' || fail "the device's counters do not show the slice copies coalesced"
import json, sys, os
d = sys.argv[1]
def load(n): return json.load(open(os.path.join(d, n)))["totals"]
def per_step(a, b, what="copies"):
    if what == "copies":
        return (load(b)["copies_executed"] - load(a)["copies_executed"]) / 10.0
    k = lambda n: json.load(open(os.path.join(d, n)))["kernels"].get(what, 0)
    return (k(b) - k(a)) / 10.0
plain, opt0, opt1, off = per_step("pa", "pb"), per_step("o0a", "o0b"), per_step("o1a", "o1b"), per_step("ofa", "ofb")
print("copies executed per step: plain %.1f, OPT=0 %.1f, OPT=1 %.1f, OPT=1 -coalesce %.1f" % (plain, opt0, opt1, off))
def want(what, got, exp):
    if abs(got - exp) > 1e-9:
        sys.exit("%s: got %s, expected %s" % (what, got, exp))
want("plain", plain, 8)
want("CUFOLD_OPT=0", opt0, 8)
want("CUFOLD_OPT=1", opt1, 1)
want("CUFOLD_RULES=-coalesce,-batch-copy", off, 8)
want("CUFOLD_RULES=-coalesce: copies", per_step("oba", "obb"), 0)
want("CUFOLD_RULES=-coalesce: batch kernels", per_step("oba", "obb", "cufold_batch_copy"), 1)
PY
note "8 slice copies per step executed as 1 at CUFOLD_OPT=1"
