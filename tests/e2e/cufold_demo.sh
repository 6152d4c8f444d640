#!/usr/bin/env bash
# cufold_demo.sh - `make demo` (scripts/demo) explains what it shows: the program's output is the
# same without and with cufold, and after the benchmark's table every target marked NOT MET is
# explained (what it means, why it is not met on the software device), and so is the difference
# between the two "cufold host cost" rows. tests layer.
source "$(dirname "$0")/lib.sh"

B=$B BENCH_OUT="$TMP/bench" BENCH_REPEAT=1 scripts/demo >"$TMP/demo" 2>&1 || { tail -20 "$TMP/demo"; fail "the demo failed"; }
[[ -f $TMP/bench/bench.json ]] || fail "the demo wrote no bench.json under BENCH_OUT"
w=$(sed -n 's/^   without: //p' "$TMP/demo"); c=$(sed -n 's/^   with:    //p' "$TMP/demo")
[[ -n $w && $w == "$c" ]] || fail "the demo's program output differs: '$w' vs '$c'"
grep -q '^== How to read this' "$TMP/demo" || { tail -20 "$TMP/demo"; fail "the demo does not say how to read it"; }
expl=$(sed -n '/^== How to read this/,$p' "$TMP/demo" | tr -s ' \n' ' ')
# each target the table marks NOT MET is explained: named, with a reason after "NOT MET:"
n=0
while read -r target; do
	n=$((n + 1))
	[[ $expl == *"$target"*"NOT MET: "[a-z]* ]] || fail "the NOT MET target '$target' is not explained"
done < <(python3 -c '
import json, sys
for w in json.load(open(sys.argv[1]))["workloads"].values():
    for t in w.get("targets", []):
        if t["verdict"] != "MET":
            print(t["target"])' "$TMP/bench/bench.json")
# the two host-cost rows
grep -q "cufold host cost / op, ns (CPU time, here)" "$TMP/demo" && grep -q "cufold host cost / op, ns (cufold's report)" "$TMP/demo" ||
	fail "the table's two host-cost rows are not there (has the benchmark changed?)"
[[ $expl == *"two 'cufold host cost' rows measure different things"* && $expl == *"CPU time, here"* &&
	$expl == *"cufold's report"* ]] || fail "the two host-cost rows are not explained"
note "$n target(s) not met, each explained; both host-cost rows explained"
