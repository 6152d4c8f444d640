#!/usr/bin/env bash
# capture_streams.sh - the trace graph of a window with two non-blocking streams joined by
# events, a blocking stream and the legacy default stream has exactly the edges CUDA's ordering
# gives (stream order, event record -> wait, the legacy stream's implicit synchronization with
# blocking streams and not with non-blocking ones), as cufold's DOT picture of the window shape
# shows; the iteration is one shape seen three times, and exactly the two launches that take the
# iteration's changing scalar are reported as moving bindings; output identical
# with and without cufold over seeds. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cap_streams"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"

CUFOLD_MODE=trace CUFOLD_DOT="$TMP/dot" CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$prog" ||
	fail "cap_streams failed with cufold"
python3 - "$TMP/dot" "$TMP/report.json" <<'PY' || fail "the graph's edges are wrong"
import glob, json, re, sys
dot_dir, report = sys.argv[1:3]
iteration = None
for path in glob.glob(dot_dir + "/shape-*.dot"):
    text = open(path).read()
    if not text.startswith("// cufold window shape"):
        sys.exit("%s does not start with cufold's marker" % path)
    if ": 13 ops," in text.splitlines()[0]:
        iteration = text
if iteration is None:
    sys.exit("no DOT file for the 13-op iteration")
head = iteration.splitlines()[0]
if "3 sightings" not in head or "4 streams" not in head:
    sys.exit("iteration shape: " + head)
edges = set((int(a), int(b)) for a, b in re.findall(r"n(\d+) -> n(\d+)", iteration))
expected = {
    (0, 1),            # stream a
    (1, 2),            # record e1 -> wait on b
    (2, 3),            # stream b
    (1, 4),            # stream a (not after b's work)
    (3, 5),            # stream b
    (4, 6), (5, 6),    # stream a; record e2 -> wait
    (6, 7),            # stream a
    (7, 8),            # stream a
    (8, 9),            # record e3 -> wait on c
    (9, 10),           # stream c
    (10, 11),          # legacy after the blocking stream c (not after a or b)
    (11, 12), (10, 12) # legacy stream order; legacy after c again
}
if edges != expected:
    print("missing:", sorted(expected - edges))
    print("extra:  ", sorted(edges - expected))
    sys.exit("edges differ")
r = json.load(open(report))
shape = [s for s in r["shapes"] if s["ops"] == 13][0]
ps = shape["pointer_stability"]
# the iteration's scalar v changes every time: the two launches taking it moved, nothing else
moved = sorted((m["op"], m["name"], m["moved"]) for m in ps["moved_ops"])
if shape["sightings"] != 3 or ps["repeats"] != 2 or ps["identical"] != 0 or shape["streams"] != 4 or \
        shape["events"] != 3 or moved != [(0, "fill", 2), (11, "axpy", 2)]:
    sys.exit("iteration shape in the report: %s" % json.dumps(shape))
if shape["ops_by_kind"] != {"kernel": 6, "memcpy": 1, "memset": 0, "event_record": 3, "event_wait": 3, "host_fn": 0}:
    sys.exit("ops by kind: %s" % shape["ops_by_kind"])
print("-- %d edges as CUDA orders them; one shape seen 3 times; the two ops taking the changing scalar moved" % len(edges))
PY
note "two streams with events: the right edges"
