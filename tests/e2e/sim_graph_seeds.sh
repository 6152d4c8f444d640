#!/usr/bin/env bash
# sim_graph_seeds.sh - the software device's graphs over SIMCUDA_SEED=1..SEEDS: a graph with its
# edges gives the right result under every seed, the same graph missing one writer -> reader
# edge gives a wrong one under at least one seed (the random order is real), and a captured
# fork/join sequence replays exactly as it ran eagerly. tests layer.
source "$(dirname "$0")/lib.sh"

PROG="$ROOT/$B/progs/graph_seeds"
[[ -x "$PROG" ]] || fail "$PROG is not built"

expect_chain="chain $(python3 -c 'print("%g" % (1.5 * 3))')"
wrong=0
for ((s = 1; s <= SEEDS; s++)); do
	SIMCUDA_SEED=$s "$PROG" chain >"$TMP/chain.$s" || fail "chain exited $? (seed $s)"
	[[ "$(cut -d' ' -f1,3 "$TMP/chain.$s")" == "$expect_chain" ]] || fail "chain, seed $s: $(cat "$TMP/chain.$s")"
	cmp -s "$TMP/chain.1" "$TMP/chain.$s" || fail "chain differs between seed 1 and seed $s"

	SIMCUDA_SEED=$s "$PROG" noedge >"$TMP/noedge.$s" || fail "noedge exited $? (seed $s)"
	[[ "$(cut -d' ' -f2 "$TMP/noedge.$s")" == "$(cut -d' ' -f2 "$TMP/chain.1")" ]] || wrong=$((wrong + 1))

	SIMCUDA_SEED=$s "$PROG" capture >"$TMP/capture.$s" || fail "capture exited $? (seed $s)"
	eager=$(sed -n 's/^eager //p' "$TMP/capture.$s")
	captured=$(sed -n 's/^captured //p' "$TMP/capture.$s")
	[[ -n "$eager" && "$eager" == "$captured" ]] || fail "capture, seed $s: $(cat "$TMP/capture.$s")"
	[[ "${eager#* }" == "10" ]] || fail "capture, seed $s: eager result $eager, expected 10"
	cmp -s "$TMP/capture.1" "$TMP/capture.$s" || fail "capture differs between seed 1 and seed $s"
done
note "chain and capture right under $SEEDS seeds"
((wrong > 0)) || fail "a missing edge went unnoticed under all $SEEDS seeds"
note "missing edge wrong under $wrong of $SEEDS seeds"

# What the program made the device do: one launch of five nodes, one kernel executed.
SIMCUDA_STATS="$TMP/stats.json" "$PROG" chain >/dev/null || fail "chain with stats exited $?"
python3 - "$TMP/stats.json" <<'PY' || fail "graph counters wrong"
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
assert t["graph_launches"] == 1, t
assert t["graph_nodes_executed"] == 5, s["graph_nodes"]
assert s["graph_nodes"] == {"memset": 1, "memcpy": 2, "kernel": 1, "empty": 1}, s["graph_nodes"]
assert s["kernels"].get("scale") == 1, s["kernels"]
assert s["calls"].get("cuGraphLaunch") == 1, s["calls"]
PY
note "graph counters right"
