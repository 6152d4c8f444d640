# replay_lane_settle.sh - the armed lane (replay/lane.c) leaves its stores and counts for one
# pass (rpl_lane_settle: at any other acquisition of the engine's lock, a refusal, a stream
# change or a segment's end; issue 22). Whatever it left, every report must read as if each op
# had been recorded and deferred the long way: the same run with the armed lane off
# (CUFOLD_TRACE: ops carry a time stamp, and the lane never arms) reports the same totals,
# window shapes and sightings, launches by kernel, replayed, deferred and matched ops and
# fallbacks. Workloads: a repeating copy loop, one whose calls change mid-window (the lane
# refuses after taking ops), one with a query after every 7th op (each query comes with ops
# the lane took and did not settle), recsys (kernels with parameters, several streams: the
# streams the lane notes for the segment ends' idle check, replay/launch.c: rpl__idle_note_run)
# and a loop with kernels that have no parameters. Deterministic: one thread, the gate off (its
# decisions follow the clock), a fixed schedule seed. tests layer.
source "$(dirname "$0")/lib.sh"
export CUFOLD_MODE=replay CUFOLD_GATE=0 SIMCUDA_SEED=3

# name, program and arguments: a report with the armed lane and one without, compared
same_report() {
	local name=$1; shift
	CUFOLD_REPORT=$TMP/$name-lane.json run_cufold "$TMP/$name-lane.out" "$@" || fail "$name exited $?"
	CUFOLD_REPORT=$TMP/$name-long.json CUFOLD_TRACE=$TMP/$name.trace run_cufold "$TMP/$name-long.out" "$@" ||
		fail "$name exited $? (CUFOLD_TRACE)"
	cmp -s "$TMP/$name-lane.out" "$TMP/$name-long.out" || fail "$name: output differs with and without the lane"
	python3 - "$name" "$TMP/$name-lane.json" "$TMP/$name-long.json" <<'PY' || fail "$name: the reports differ"
import json, sys
name, lane, long_ = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
# what differs by design: the process, times and their samples, cufold's own memory (the
# trace's buffer), and which lane took the ops
SKIP = {"pid", "run_id", "memory", "lane_ops", "build_ns_max", "own_samples", "match_samples"}

def diff(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        out = []
        for k in sorted(set(x) | set(y)):
            if k in SKIP or k.endswith("_ns") or "_ns_" in k or k.endswith("_us"):
                continue
            out += diff(x.get(k), y.get(k), path + "." + k)
        return out
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [d for i, (u, v) in enumerate(zip(x, y)) for d in diff(u, v, "%s[%d]" % (path, i))]
    return [] if x == y else [(path, x, y)]

took = lane["replay"]["lane_ops"]
print("-- %s: %d of %d deferred ops by the armed lane, %d without it" % (
    name, took, lane["replay"]["ops_deferred"], long_["replay"]["lane_ops"]))
assert took > 0 and long_["replay"]["lane_ops"] == 0, "the comparison needs the lane on and off"
d = diff(lane, long_, "")
for p in d[:20]:
    print("   %s: %r with the lane, %r without" % p)
assert not d, "%d differences" % len(d)
PY
}

prog=$B/progs/copy_loop
same_report fixed "$prog" fixed 40 12
same_report drift "$prog" drift 40 12
COPY_LOOP_QUERY=7 same_report query "$prog" fixed 40 12
same_report recsys "$B/workloads/recsys" --steps 8
# kernels with no parameters among the others (debug builds assert at each close that every
# launch through kernelParams points somewhere: the lanes' NULL made replay classify it eager)
same_report noparams "$B/progs/rpl_loop" noparams 30
note "the armed lane's settled stores and counts read as the long path's"
