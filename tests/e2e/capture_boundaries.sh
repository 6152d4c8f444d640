#!/usr/bin/env bash
# capture_boundaries.sh - every kind of call that ends a capture window does, in order, with the
# ops before it in the window, and the calls that only may end one (a query never; a synchronize
# or free only when it names work or memory of the window) do not otherwise:
# tests/progs/cap_boundaries does one step of work before each kind
# (synchronize, host copy, free, module unload, context push/pop, destroy, the program's
# own capture, a barrier kernel, a launch cufold cannot record, an unmodeled call, a full window,
# fork, exit). The trace's window-end events and the report's counts are checked against the
# expected sequence; the program's output is identical with and without cufold. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cap_boundaries"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"

run_plain "$TMP/plain" "$prog" full || fail "cap_boundaries full failed without cufold"
CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/report.json" CUFOLD_TRACE="$TMP/trace.json" \
	run_cufold "$TMP/traced" "$prog" full 2>"$TMP/err" || { cat "$TMP/err"; fail "cap_boundaries full failed with cufold"; }
cmp -s "$TMP/plain" "$TMP/traced" || { diff "$TMP/plain" "$TMP/traced"; fail "output differs in trace mode"; }
[[ ! -s "$TMP/err" ]] || { cat "$TMP/err"; fail "cufold printed something at the default log level"; }

python3 - "$TMP/report.json" "$TMP/trace.json" <<'PY' || fail "windows did not close as expected"
import json, re, sys
report = json.load(open(sys.argv[1]))
trace = json.load(open(sys.argv[2]))
label_to_kind = {v["label"]: k for k, v in report["boundaries"].items()}
ends = []
for ev in trace["traceEvents"]:
    if ev.get("cat") == "boundary":
        m = re.match(r"window (\d+) ends: (.*)$", ev["name"])
        ends.append((int(m.group(1)), label_to_kind[m.group(2)], ev["args"]["by"], ev["args"]["ops"]))
ends.sort()
got = [e[1:] for e in ends]
expected = [
    ("SYNC", "cuStreamSynchronize", 3),      # memset, work, copy; cuCtxSetCurrent(same) is no boundary
    ("SYNC", "cuEventSynchronize", 2),
    ("SYNC", "cuCtxSynchronize", 2),
    ("SYNC", "cuStreamSynchronize", 1),      # the query, syncs of what has no work, an unused free: none
    ("HOST_COPY", "cuMemcpyDtoHAsync_v2", 4), # work, record, (polled: no boundary), work, copy
    ("HOST_COPY", "cuMemcpyDtoH_v2", 2),     # (the sync after the async copy had nothing to wait for)
    ("FREE", "cuMemFree_v2", 3),             # work, keep, a memset of the freed memory
    ("MODULE_UNLOAD", "cuModuleUnload", 2),     # work, a kernel of the module unloaded
    ("CONTEXT", "cuCtxPushCurrent_v2", 1),
    ("CONTEXT", "cuCtxPopCurrent_v2", 1),
    ("DESTROY", "cuStreamDestroy_v2", 1),
    ("CAPTURE", "cuStreamBeginCapture_v2", 2),  # the captured launch is not recorded
    ("BARRIER", "cuLaunchKernel", 2),
    ("OPAQUE", "cuLaunchKernel", 2),
    ("UNMODELED", "cuFuncSetCacheConfig", 1),
    ("FULL", "cuMemsetD32Async", 65536),
    ("FORK", "?", 2),
    ("HOST_COPY", "cuMemcpyDtoH_v2", 1),
    ("HOST_COPY", "cuMemcpyDtoH_v2", 1),
    ("EXIT", "?", 1),
]
if got != expected:
    for i in range(max(len(got), len(expected))):
        g = got[i] if i < len(got) else None
        e = expected[i] if i < len(expected) else None
        print("%s %-50s %s" % ("  " if g == e else "!!", g, e))
    sys.exit("window ends differ from the expected sequence")
counts = {}
for k, _, _ in expected:
    counts[k] = counts.get(k, 0) + 1
for k, v in report["boundaries"].items():
    if v["windows_closed"] != counts.get(k, 0):
        sys.exit("report: %s closed %d windows, expected %d" % (k, v["windows_closed"], counts.get(k, 0)))
    if v["calls"] < v["windows_closed"]:
        sys.exit("report: %s seen %d times but closed %d windows" % (k, v["calls"], v["windows_closed"]))
# seen but not closing: every query, the syncs of what the window did not hold, the unused free
b = report["boundaries"]
if b["QUERY"]["calls"] < 2 or b["QUERY"]["windows_closed"] != 0:
    sys.exit("report: queries %s, expected >= 2 calls and no window closed" % b["QUERY"])
if b["SYNC"]["calls"] < b["SYNC"]["windows_closed"] + 3:
    sys.exit("report: syncs %s, expected at least 3 calls that closed nothing" % b["SYNC"])
if b["FREE"]["calls"] < 2:
    sys.exit("report: frees %s, expected 2 calls" % b["FREE"])
t = report["totals"]
if t["windows"] != len(expected):
    sys.exit("report: %d windows, expected %d" % (t["windows"], len(expected)))
if t["passed_through_in_capture"] != 1:
    sys.exit("report: %d calls passed through during the capture, expected 1" % t["passed_through_in_capture"])
print("-- %d windows closed in the expected order, by %d kinds of boundary" % (len(got), len(counts)))
PY
note "every boundary kind closes its window before the call"
