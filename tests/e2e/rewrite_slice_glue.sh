# rewrite_slice_glue.sh - the slice-glue rule end to end: results bit for bit the same as
# without cufold over 20 seeds at CUFOLD_OPT=1 (steady buffers, and buffers that move so that a
# guard fails mid-run) and at CUFOLD_OPT=0; the device's own counters show the 16 copies of a
# step (8 slices, 8 glue) executed as 9 at CUFOLD_OPT=1 without batch-copy, as one
# launch of the batch kernel (nine ranges) with it, as 16 at CUFOLD_OPT=0 and without slice-glue. tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rw_slice_glue
[[ -x $prog ]] || fail "$prog is not built"
grep -aq 'slice-glue' "$CUFOLD" || fail "the slice-glue rule is not in $CUFOLD"
export CUFOLD_MODE=replay

CUFOLD_OPT=1 same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=1 same_output_over_seeds "$prog" moving 24
# the moving run took the guard path: a template was retired because a guard failed
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -q 'a rewrite guard failed' "$TMP/moving.json" || fail "no template retired by a failed guard in the moving run"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the failed guard was not counted as a GUARD fallback"
CUFOLD_OPT=0 same_output_over_seeds "$prog" moving 24
# a shape whose guards keep failing is replayed unrewritten after 3 failures (no 4th GUARD)
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/long.json run_cufold /dev/null "$prog" moving 80 || fail "long moving run exited $?"
python3 - "$TMP/long.json" <<'PY' || fail "the shape was not given up on after 3 failed guards"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
print("long moving run: fallbacks %s, templates %s" % (r["fallbacks"], [t["rewrite"]["rules"] for t in r["templates"]]))
if r["fallbacks"].get("GUARD") != 3:
    sys.exit("GUARD fallbacks: %s, expected exactly 3" % r["fallbacks"].get("GUARD"))
if not any(not t["rewrite"]["rules"] and t["launches"] for t in r["templates"]):
    sys.exit("no template replayed without rewriting after the third failure")
PY

# copies executed per steady-state step (lib.sh's count_steps)
CUFOLD_OPT=1 CUFOLD_RULES=-batch-copy count_steps o1 cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES= count_steps all cufold "$prog" steady @STEPS@
CUFOLD_OPT=0 CUFOLD_RULES= count_steps o0 cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES=-slice-glue,-batch-copy,-copy-chain count_steps off cufold "$prog" steady @STEPS@
count_steps plain plain "$prog" steady @STEPS@
want_per_step plain copies_executed 16
want_per_step o0 copies_executed 16
want_per_step o1 copies_executed 9
want_per_step off copies_executed 16
# all rules: the 8 slices and the forwarded copy (independent) go in one launch of the batch kernel
want_per_step all copies_executed 0
want_per_step all kernel:cufold_batch_copy 1
note "16 copies per step (8 slices, 8 glue) executed as 9 (-batch-copy), as 1 batch launch at CUFOLD_OPT=1"

# the report says what the rewrite did; the pictures mark the nodes it rewrote and merged
rm -rf "$TMP/dot"
CUFOLD_OPT=1 CUFOLD_RULES=-batch-copy CUFOLD_CALLSITES=1 CUFOLD_REPORT=$TMP/sg.json CUFOLD_DOT=$TMP/dot run_cufold /dev/null "$prog" steady 6 ||
	fail "report run exited $?"
python3 - "$TMP/sg.json" <<'PY' || fail "the report does not show the slice-glue rewrite"
import json, sys
t = [t for t in json.load(open(sys.argv[1]))["replay"]["templates"] if t["rewrite"]["rules"]]
if not t:
    sys.exit("no template says a rule fired")
rw = t[0]["rewrite"]
print("rewrite of the template:", {k: v for k, v in rw.items() if k != "call_sites"})
if rw["rules"].get("slice-glue") != 1:
    sys.exit("slice-glue fired %s times, expected once" % rw["rules"].get("slice-glue"))
if rw["copies"] != [16, 9] or rw["bytes"][0] != rw["bytes"][1]:
    sys.exit("copies before/after %s, bytes %s: expected [16, 9] and the same bytes" % (rw["copies"], rw["bytes"]))
if not rw["call_sites"]:
    sys.exit("no call site of a rewritten op")
if not rw["rule_call_sites"].get("slice-glue"):
    sys.exit("no call site named for slice-glue: %s" % rw["rule_call_sites"])
PY
grep -q 'rewritten by slice-glue' "$TMP"/dot/*.dot || fail "no node marked rewritten by slice-glue in the pictures"
[[ $(grep -c 'merged into .* by slice-glue' "$TMP"/dot/*.dot | awk -F: '{s += $2} END {print s}') == 7 ]] ||
	fail "the pictures do not mark the 7 glue copies merged into the first"
