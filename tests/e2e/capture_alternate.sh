#!/usr/bin/env bash
# capture_alternate.sh - two iteration shapes that alternate (train, evaluate, train, ...) get a
# window shape each in cufold's trie, each seen every other iteration with its own binding
# stability; output identical with and without cufold. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cap_alternate"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
same_output_over_seeds "$prog" 12

CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$prog" 20 || fail "cap_alternate failed"
python3 - "$TMP/report.json" <<'PY' || fail "the alternating shapes were not told apart"
import json, sys
r = json.load(open(sys.argv[1]))
shapes = {s["ops"]: s for s in r["shapes"]}
train, evaluate = shapes.get(4), shapes.get(3)
if not train or not evaluate:
    sys.exit("no 4-op and 3-op shapes: %s" % [(s["id"], s["ops"], s["sightings"]) for s in r["shapes"]])
# the first train step shares its window with the set-up memset (5 ops); the rest are alike
if train["sightings"] != 9 or evaluate["sightings"] != 10:
    sys.exit("sightings: train %d, evaluate %d" % (train["sightings"], evaluate["sightings"]))
if train["kernels"] != {"fill": 1, "scale": 1, "add": 1} or evaluate["kernels"] != {"relu": 1}:
    sys.exit("kernels: %s / %s" % (train["kernels"], evaluate["kernels"]))
if evaluate["pointer_stability"]["identical"] != 9:
    sys.exit("the evaluation step's bindings never change: %s" % evaluate["pointer_stability"])
print("-- train shape %d seen %d times, evaluation shape %d seen %d times"
      % (train["id"], train["sightings"], evaluate["id"], evaluate["sightings"]))
PY
note "alternating iteration shapes kept apart"
