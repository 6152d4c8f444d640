# replay_report.sh - replay's part of CUFOLD_REPORT: per template its segments, launches, ops
# replayed, patches, host submissions saved and fallbacks with their reasons (a mismatch mid-
# window; a template whose bindings move on every launch goes back to eager where patching costs more
# than eager submission (SIMCUDA_EXEC_UPDATE_NS=5000) and names its
# window and call sites; a freed buffer retires its template; a failing graph launch sends the
# context to passthrough), the top-level host_ns_per_op and replay's own_ns, own_samples and
# host_bytes_peak that scripts/bench reads, the builds' own time (own_ns_per_op_with_builds); the counts agree with the software device's own.
# tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

rep() { # name mode steps [env...]
	local name=$1 mode=$2 steps=$3
	shift 3
	env "$@" CUFOLD_REPORT="$TMP/$name.json" SIMCUDA_STATS="$TMP/$name.stats" LD_PRELOAD="$CUFOLD" \
		"$prog" "$mode" "$steps" >"$TMP/$name.out" 2>"$TMP/$name.err" || { cat "$TMP/$name.err"; fail "$mode exited $?"; }
	run_plain "$TMP/$name.plain" "$prog" "$mode" "$steps" || fail "$mode exited $? without cufold"
	cmp -s "$TMP/$name.out" "$TMP/$name.plain" || fail "$mode: output differs with cufold"
}
rep train train 16
rep mismatch mismatch 16 CUFOLD_SEGMENT=16
rep churn churn 30 CUFOLD_CALLSITES=1 SIMCUDA_EXEC_UPDATE_NS=5000 # patching dearer than eager
rep free free 16
rep fault train 12 SIMCUDA_FAIL=cuGraphLaunch:3
python3 - "$TMP" <<'PY' || fail "the report does not say what replay did"
import json, os, sys
d = sys.argv[1]
def load(n):
    return json.load(open(os.path.join(d, n + ".json"))), json.load(open(os.path.join(d, n + ".stats")))["totals"]
def want(what, cond):
    if not cond:
        sys.exit("report: " + what)

r, s = load("train")
rp = r["replay"]
want("host_ns_per_op at the top level, a number > 0", isinstance(r.get("host_ns_per_op"), (int, float)) and r["host_ns_per_op"] > 0)
# cufold's whole time per call contains its matching (both sampled: allow for noise)
want("own_ns_per_op at the top level and in replay, above the matching cost",
     isinstance(r.get("own_ns_per_op"), (int, float)) and r["own_ns_per_op"] == rp["own_ns_per_op"] and
     r["own_ns_per_op"] > 0.8 * r["host_ns_per_op"])
# its sums (scripts/bench differences two runs' for the steady state) give it back
want("own_ns and own_samples in replay, own_ns / own_samples = own_ns_per_op",
     rp.get("own_samples", 0) > 0 and abs(rp["own_ns"] / rp["own_samples"] - rp["own_ns_per_op"]) < 0.1)
# template builds run at the lock's drop, outside the timed sample: counted whole, and spread over
# the ops in own_ns_per_op_with_builds (the whole run's figure scripts/bench-overhead checks)
want("builds and build_own_ns in replay, a build per template at least",
     rp.get("builds", 0) >= rp["templates_built"] >= 1 and rp.get("build_own_ns", 0) > 0)
want("own_ns_per_op_with_builds = own_ns_per_op + build_own_ns / ops, top level and replay alike",
     r.get("own_ns_per_op_with_builds") == rp.get("own_ns_per_op_with_builds") and
     abs(r["own_ns_per_op_with_builds"] - (r["own_ns_per_op"] + rp["build_own_ns"] / r["totals"]["ops"])) < 0.15)
want("host_bytes_peak in replay, at least host_bytes", rp.get("host_bytes_peak", 0) >= rp["host_bytes"] > 0)
t = rp["templates"][0]
nseg = len(t["segment_launches"])
want("one template of 46 ops, 45 graphable, cut small at both ends",
     (t["ops"], t["graph_ops"], t["segments"]) == (46, 45, nseg) and
     [g["ops"] for g in t["segment_launches"]] == [4, 4, 8, 15, 7, 4, 3])
# segments launch alone or, while the device is busy, inside buddy blocks (launch.c): every
# segment's ops go once a window either way
blocks = t["block_launches_by_block"]
segs = t["segment_launches"]
want("graph launches as the device counted them", rp["graph_launches"] == s["graph_launches"] == t["launches"])
want("launches = segment launches + block launches",
     t["launches"] == sum(g["launches"] for g in segs) + sum(b["launches"] for b in blocks) and
     t["block_launches"] == sum(b["launches"] for b in blocks))
want("13 windows replayed, each segment once a window, alone or in a block",
     t["windows_replayed"] == 13 and
     all(g["launches"] + sum(b["launches"] for b in blocks
                             if b["first"] <= g["first"] < b["first"] + b["ops"]) == 13 for g in segs))
want("at most one launch per segment", t["launches"] <= 13 * nseg)
want("submissions saved = ops replayed - launches",
     t["host_submissions_saved"] == 13 * 45 - t["launches"] == rp["host_submissions_saved"])
want("every launch patched the changing scalar", t["segment_launches"][0]["patched_launches"] == 13)
want("no fallback", rp["fallbacks"] == {} and rp["ops_flushed_eagerly"] == 0)

r, s = load("mismatch")
rp = r["replay"]
want("a mid-window mismatch is a MISMATCH fallback", rp["fallbacks"].get("MISMATCH", 0) >= 1 and rp["ops_flushed_eagerly"] > 0)
want("the mismatching shape gets its own template", rp["templates_built"] >= 2)
want("launches agree with the device", rp["graph_launches"] == s["graph_launches"])

r, _ = load("churn")
rp = r["replay"]
t = [t for t in rp["templates"] if t["retired"]]
want("a churning template is retired for CHURN", rp["fallbacks"].get("CHURN") == 1 and len(t) == 1)
want("it says why, which window and which call sites moved",
     "patching" in t[0]["retired"] and t[0]["shape"] >= 1 and t[0]["built_from_window"] >= 1 and
     any("mode_churn" in c for c in t[0]["moved_call_sites"]))

r, _ = load("free")
rp = r["replay"]
want("a freed referenced buffer retires its template", rp["fallbacks"].get("FREE", 0) >= 1 and rp["retired"] >= 1)
want("the shape replays again afterwards", rp["templates_live"] >= 1 and rp["graph_launches"] > 0)

r, _ = load("fault")
rp = r["replay"]
want("a failed launch sends the context to passthrough", rp["passthrough_after_failure"] is True and rp["fallbacks"].get("LAUNCH") == 1)
want("the peak of replay's memory counts the template retired then", rp["templates_live"] == 0 and
     rp["host_bytes_peak"] > rp["host_bytes"])
print("report ok: %.0f ns/op matching" % load("train")[0]["host_ns_per_op"])
PY
grep -q "replay: launching a graph failed" "$TMP/fault.err" || fail "no warning for the failed launch"
note "the report says what replay did"
