# replay_fast_lane.sh - the fast lanes (capture/record.c: repeat, replay/match.c: follow, and the
# armed lane that joins them, replay/lane.c; issue 22) record and defer a call that repeats the
# template's op without the long path; when a call in
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

# the armed lane takes most ops of a loop that repeats (every op but a segment's last and a
# window's first), and none after an engine entry in between: a query of the stream between
# every two ops of a step (copy_loop's k extra queries, cuStreamQuery each) disarms it at each
for mode in fixed drift; do
	CUFOLD_REPORT=$TMP/lane-$mode.json run_cufold "$TMP/out" "$prog" $mode 40 12 || fail "$mode exited $?"
done
CUFOLD_REPORT=$TMP/lane-query.json COPY_LOOP_QUERY=1 run_cufold "$TMP/out" "$prog" fixed 40 12 ||
	fail "fixed with queries exited $?"
python3 - "$TMP" <<'PY' || fail "the armed lane took too few ops, or ops after a query"
import json, sys
rep = lambda n: json.load(open("%s/lane-%s.json" % (sys.argv[1], n)))["replay"]
for n, share in (("fixed", 0.6), ("drift", 0.05)):
    # drift: two templates share the window's first ops, and neither replay's lane nor the armed
    # one follows two candidates (match.c: follow); each takes the ops after the divergence
    r = rep(n)
    print("-- %s: %d of %d deferred ops by the armed lane" % (n, r["lane_ops"], r["ops_deferred"]))
    assert r["lane_ops"] >= share * r["ops_deferred"] > 0, (n, r["lane_ops"], r["ops_deferred"])
q = rep("query")
print("-- fixed with a query between ops: %d of %d deferred ops by the armed lane" % (q["lane_ops"], q["ops_deferred"]))
assert q["ops_deferred"] > 0 and q["lane_ops"] == 0, (q["lane_ops"], q["ops_deferred"])
PY
COPY_LOOP_QUERY=1 SEEDS=4 same_output_over_seeds "$prog" fixed 40 12

# the report's moved bindings (replay/launch.c: moved_weight): each graph's first 64 launches
# counted, then one in 16 of its launches counted 16 times; copy_loop move moves three bindings
# at every step, which the estimate must find at about every step for each (a count kept over
# the template's launches, two graphs a step, gave one 560 and another 32 of 300)
CUFOLD_REPORT=$TMP/moved.json run_cufold "$TMP/out" "$prog" move 300 12 || fail "move exited $?"
python3 - "$TMP/moved.json" <<'PY' || fail "the report's moved bindings are off"
import json, sys
t = json.load(open(sys.argv[1]))["replay"]["templates"][0]
top = [(b["op"], b["launches"]) for b in t["moved_bindings"][:3]]
print("-- move 300 steps: moved bindings (op, launches) %s" % top)
assert len(top) == 3 and all(0.85 * 300 <= n <= 1.05 * 300 for _, n in top), top
PY

# trace mode (capture's lane alone): the same program output
for mode in fixed drift; do
	CUFOLD_MODE=trace SEEDS=2 same_output_over_seeds "$prog" $mode 20 12
done
note "fast lanes: identical results"
