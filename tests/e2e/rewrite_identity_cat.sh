# rewrite_identity_cat.sh - the identity-cat rule end to end: results bit for bit the same as
# without cufold over 20 seeds (steady views, views that move so that the guard fails mid-run,
# views with gaps that are never a copy); the device's own counters show the 3 `cat` launches of a
# step executed as copies at CUFOLD_OPT=1, left alone with CUFOLD_RULES=-identity-cat and for the
# near miss. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rw_identity_cat
[[ -x $prog ]] || fail "$prog is not built"
grep -aq 'identity-cat' "$CUFOLD" || fail "the identity-cat rule is not in $CUFOLD"
export CUFOLD_MODE=replay

CUFOLD_OPT=1 same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=1 same_output_over_seeds "$prog" moving 24
CUFOLD_OPT=1 same_output_over_seeds "$prog" nearmiss 12
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the reversed or overlapping views did not fail a guard"

# per step = (16-step run - 6-step run) / 10: cat launches and copies executed
runs() { # name mode opt [rules]
	SIMCUDA_STATS=$TMP/$1a CUFOLD_OPT=$3 CUFOLD_RULES=${4:-} run_cufold /dev/null "$prog" "$2" 6 || fail "$1 exited $?"
	SIMCUDA_STATS=$TMP/$1b CUFOLD_OPT=$3 CUFOLD_RULES=${4:-} run_cufold /dev/null "$prog" "$2" 16 || fail "$1 exited $?"
}
runs on steady 1
runs off steady 1 -identity-cat
runs near nearmiss 1
python3 - "$TMP" <<'PY' || fail "the device's counters do not show the cat replaced by a copy"
import json, os, sys
d = sys.argv[1]
def step(name, what):
    a, b = (json.load(open(os.path.join(d, name + s))) for s in "ab")
    if what == "copies":
        return (b["totals"]["copies_executed"] - a["totals"]["copies_executed"]) / 10.0
    return (b["kernels"].get(what, 0) - a["kernels"].get(what, 0)) / 10.0
got = {n: (step(n, "cat"), step(n, "copies")) for n in ("on", "off", "near")}
print("per step (cat launches, copies): OPT=1 %s, -identity-cat %s, near miss %s" % (got["on"], got["off"], got["near"]))
want = {"on": (0, 3), "off": (3, 0), "near": (3, 0)}
for n, w in want.items():
    if got[n] != w:
        sys.exit("%s: got %s, expected %s" % (n, got[n], w))
PY
note "each cat of 8 abutting views executed as one copy; the near miss left alone"
