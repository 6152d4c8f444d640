#!/usr/bin/env bash
# capture_report.sh - in CUFOLD_MODE=trace, the report's counts equal the software device's own
# counters (launches by kernel, copies, memsets, bytes copied and set) for the sample training
# loop, the three workloads and 8 threads launching at once; the report, the Chrome trace and the
# DOT files parse and have the fields their readers need (traceEvents with ph/ts/pid/tid, one
# track per stream, window ends); CUFOLD_LOG=info prints the summary; program output is
# identical with and without cufold. tests layer.
source "$(dirname "$0")/lib.sh"

check() { # label, command...
	local label=$1
	shift
	rm -rf "$TMP/stats.json" "$TMP/report.json" "$TMP/trace.json" "$TMP/dot"
	run_plain "$TMP/plain" "$@" || fail "$label failed without cufold"
	SIMCUDA_STATS="$TMP/stats.json" CUFOLD_MODE=trace CUFOLD_LOG=info CUFOLD_REPORT="$TMP/report.json" \
		CUFOLD_TRACE="$TMP/trace.json" CUFOLD_DOT="$TMP/dot" run_cufold "$TMP/traced" "$@" 2>"$TMP/err" ||
		{ cat "$TMP/err"; fail "$label failed with cufold"; }
	cmp -s "$TMP/plain" "$TMP/traced" || { diff "$TMP/plain" "$TMP/traced" | head; fail "$label: output differs"; }
	grep -q "I engine.c:[0-9]*: trace: [0-9]* ops (" "$TMP/err" || { cat "$TMP/err"; fail "$label: no summary at exit"; }
	python3 - "$label" "$TMP" <<'PY' || fail "$label: report, trace or pictures wrong"
import glob, json, sys
label, tmp = sys.argv[1:3]
stats = json.load(open(tmp + "/stats.json"))
report = json.load(open(tmp + "/report.json"))
t = report["totals"]
want = {
    "launches_by_kernel": stats["launches"],
    "launches": stats["totals"]["kernel_launches"],
    "copies": stats["submissions"].get("memcpy", 0),
    "memsets": stats["submissions"].get("memset", 0),
    "bytes_copied": stats["totals"]["bytes_copied"],
    "bytes_set": stats["totals"]["bytes_set"],
}
got = dict(t, launches_by_kernel=report["launches_by_kernel"])
bad = [k for k in want if got[k] != want[k]]
if bad:
    for k in bad:
        print("  %s: cufold %s, device %s" % (k, got[k], want[k]))
    sys.exit("%s: the report's counts differ from the device's" % label)
# every recorded op is in a window, and the kinds add up
if sum(t["ops_by_kind"].values()) != t["ops"] or t["ops_by_kind"]["kernel"] != t["launches"]:
    sys.exit("%s: ops by kind %s do not add up" % (label, t["ops_by_kind"]))
if sum(b["windows_closed"] for b in report["boundaries"].values()) != t["windows"]:
    sys.exit("%s: windows by boundary do not add up to %d" % (label, t["windows"]))
if not report["shapes"] or any(s["sightings"] < 1 or s["ops"] < 1 for s in report["shapes"]):
    sys.exit("%s: bad shapes" % label)
mem = report["memory"]
if mem["cufold_host_bytes"] <= 0 or sum(mem["parts"].values()) != mem["cufold_host_bytes"]:
    sys.exit("%s: no memory figure, or its parts do not add up: %s" % (label, mem))
# each shape keeps its last window, sized for its own ops, not for the longest window that
# recycled its storage (3.4 KiB per op on recsys when it was; about 0.8 now, a recorded op being
# 344 bytes plus the trie's and the arena's share)
shape_ops = sum(s["ops"] for s in report["shapes"])
if mem["parts"]["shapes"] > 1536 * shape_ops + 256 * 1024:
    sys.exit("%s: the shapes hold %d bytes for %d ops" % (label, mem["parts"]["shapes"], shape_ops))
print("%s: shapes hold %.0f bytes per op (%d ops)" % (label, mem["parts"]["shapes"] / shape_ops, shape_ops))
# the trace: Chrome's event format as Perfetto reads it
trace = json.load(open(tmp + "/trace.json"))
ev = trace["traceEvents"]
if not isinstance(ev, list) or not ev:
    sys.exit("%s: no traceEvents" % label)
for e in ev:
    for k in ("ph", "pid", "tid", "name"):
        if k not in e:
            sys.exit("%s: trace event without %s: %s" % (label, k, e))
    if e["ph"] in ("X", "i") and not isinstance(e.get("ts"), (int, float)):
        sys.exit("%s: event without ts: %s" % (label, e))
    if e["ph"] == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
        sys.exit("%s: slice without dur: %s" % (label, e))
slices = [e for e in ev if e["ph"] == "X"]
ends = [e for e in ev if e["ph"] == "i"]
tracks = {e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] != 0}
if len(slices) != t["ops"] or len(ends) != t["windows"]:
    sys.exit("%s: trace has %d slices / %d window ends, report %d ops / %d windows"
             % (label, len(slices), len(ends), t["ops"], t["windows"]))
if {e["tid"] for e in slices} != tracks:
    sys.exit("%s: slices on tracks %s, named tracks %s" % (label, {e["tid"] for e in slices}, tracks))
if trace["cufold_trace"]["truncated"]:
    sys.exit("%s: trace truncated" % label)
dots = glob.glob(tmp + "/dot/shape-*.dot")
if len(dots) != len(report["shapes"]):
    sys.exit("%s: %d DOT files for %d shapes" % (label, len(dots), len(report["shapes"])))
for d in dots:
    text = open(d).read()
    if not text.startswith("// cufold window shape") or "digraph" not in text or not text.rstrip().endswith("}"):
        sys.exit("%s: %s is not a DOT file of cufold's" % (label, d))
print("-- %s: %d launches over %d kernels, %d copies (%d bytes), %d memsets (%d bytes) = device; "
      "%d windows, %d shapes, %d trace events, %d pictures"
      % (label, t["launches"], len(report["launches_by_kernel"]), t["copies"], t["bytes_copied"], t["memsets"],
         t["bytes_set"], t["windows"], len(report["shapes"]), len(ev), len(dots)))
PY
}

check sample_train "$B/progs/sample_train" 12 16
for w in recsys transformer inference; do
	check "$w" "$B/workloads/$w" --steps 4
done
check icpt_threads "$B/progs/icpt_threads"
for s in 3 7; do
	SIMCUDA_SEED=$s check "sample_train seed $s" "$B/progs/sample_train" 5 8
done

# call sites (CUFOLD_CALLSITES=1): named frames of the program, off by default
CUFOLD_MODE=trace CUFOLD_CALLSITES=1 CUFOLD_REPORT="$TMP/cs.json" run_cufold "$TMP/out" "$B/progs/sample_train" 3 4 ||
	fail "sample_train failed with call sites"
cmp -s "$TMP/out" <(run_plain /dev/stdout "$B/progs/sample_train" 3 4) || fail "call sites changed the output"
CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/nocs.json" run_cufold "$TMP/out" "$B/progs/sample_train" 3 4 || fail "sample_train failed"
python3 - "$TMP/cs.json" "$TMP/nocs.json" <<'PY' || fail "call sites wrong"
import json, sys
cs, nocs = (json.load(open(p)) for p in sys.argv[1:3])
sites = cs["call_sites"]
if not sites or not all("main+0x" in s["site"] for s in sites):
    sys.exit("call sites without the program's frames: %s" % sites[:3])
# the innermost frame is the program's (its launch helper, testlib's helpers, or main where the
# compiler inlined a helper, as sanitizer builds do): never one of cufold's or the driver's
inner = [s["site"].split(" < ")[0].split("+0x")[0] for s in sites]
if any(n.startswith(("cu", "shim", "cap_", "rpl_", "sim_", "?")) for n in inner):
    sys.exit("an innermost frame is not the program's: %s" % inner)
if not any(n in ("launch", "main") for n in inner):
    sys.exit("no call site in the program's own launch code: %s" % inner)
if not all(s["call_sites"] for s in cs["shapes"]):
    sys.exit("a shape without call sites")
if nocs["call_sites"] or any(s["call_sites"] for s in nocs["shapes"]) or nocs["cufold_report"]["callsites"]:
    sys.exit("call sites recorded while off")
print("-- %d call sites, e.g. %s" % (len(sites), sites[0]["site"]))
PY
