# replay_fast_lane.sh - the fast lanes (capture/record.c: repeat, replay/match.c: follow, issue 22)
# record and defer a call that repeats the template's op without the long path; when a call in
# the middle of a window that went by them changes (copy_loop drift: a memset's value, a
# binding; a copy's size, the key), the long path takes it from there and the program's results
# stay bit-identical over seeds, with short segments and rewrites too, and the report shows the
# mismatch and the patch; trace mode too. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/copy_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0
gate_off_under_tsan

SEEDS=${SEEDS_FAST_LANE:-8} same_output_over_seeds "$prog" drift 60 12
CUFOLD_SEGMENT=5 SEEDS=4 same_output_over_seeds "$prog" drift 40 12
CUFOLD_OPT=1 SEEDS=4 same_output_over_seeds "$prog" drift 40 12

# the mismatch really came mid-window after deferred ops, and the binding change was patched
CUFOLD_REPORT=$TMP/report.json run_cufold "$TMP/out" "$prog" drift 60 12 || fail "drift exited $?"
python3 - "$TMP/report.json" <<'PY' || fail "the report does not show the fast lanes' fallbacks"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
mism = r.get("fallbacks", {}).get("MISMATCH", 0)
print("-- deferred %d, replayed %d, flushed %d, mismatches %d, patches %d" % (
    r["ops_deferred"], r["ops_replayed"], r["ops_flushed_eagerly"], mism, r["patches"]))
assert r["ops_replayed"] > 0 and mism > 0 and r["ops_flushed_eagerly"] > 0 and r["patches"] > 0
PY

# trace mode (capture's lane alone): the same program output
for mode in fixed drift; do
	CUFOLD_MODE=trace SEEDS=2 same_output_over_seeds "$prog" $mode 20 12
done
note "fast lanes: identical results"
