#!/usr/bin/env bash
# capture_vmm_grow.sh - a loop on memory managed as PyTorch's expandable segments do (a reservation,
# chunks mapped as it grows, unmapped and mapped again; tests/progs/vmm_grow.c) computes the
# same bits with cufold replaying over the software device's seeds (and at CUFOLD_OPT 0 and 2
# over 5); cufold replays its steps,
# an unmap of memory the open window references ends the window (and only such an unmap), and
# every virtual memory call passes through cufold (trace counts equal the device's). tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/vmm_grow"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
export CUFOLD_MODE=replay

same_output_over_seeds "$prog" 40
for opt in 0 2; do
	CUFOLD_OPT=$opt SEEDS=5 same_output_over_seeds "$prog" 40
done

SIMCUDA_SEED=5 CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$prog" 40 || fail "vmm_grow exited $?"
python3 - "$TMP/report.json" "$TMP/out" <<'PY' || fail "cufold's report does not show the unmaps and the replay"
import json, re, sys
r = json.load(open(sys.argv[1]))
m = re.search(r"unmaps: (\d+) spare, (\d+) referenced", open(sys.argv[2]).read())
spare, ref = int(m.group(1)), int(m.group(2))
free = r["boundaries"]["FREE"]
# only the unmaps inside a window that references the unmapped chunk end it
if free["windows_closed"] != ref:
    sys.exit("unmaps ended %d windows, expected %d (the referenced ones; %d spare ones must not)"
             % (free["windows_closed"], ref, spare))
rp = r["replay"]
if rp["graph_launches"] == 0 or rp["ops_replayed"] == 0:
    sys.exit("nothing replayed: %s" % {k: v for k, v in rp.items() if not isinstance(v, (list, dict))})
print("-- %d referenced unmaps ended their windows, %d spare ones did not; %d ops replayed in %d graph launches"
      % (ref, spare, rp["ops_replayed"], rp["graph_launches"]))
PY

# every VMM entry point the program calls reaches the device through cufold, counted as such
env SIMCUDA_STATS="$TMP/stats.json" CUFOLD_MODE=trace CUFOLD_LOG=debug LD_PRELOAD="$CUFOLD" "$prog" 12 \
	>"$TMP/trace.out" 2>"$TMP/trace.err" || { cat "$TMP/trace.err"; fail "vmm_grow failed in trace mode"; }
python3 - "$TMP/trace.err" "$TMP/stats.json" <<'PY' || fail "trace counts of the VMM entry points differ from the device's"
import json, re, sys
dev = json.load(open(sys.argv[2]))["calls"]
cf = {}
for line in open(sys.argv[1]):
    m = re.search(r"\] [ID] shim\.c:\d+: calls (\S+) (\d+)$", line.rstrip("\n"))
    if m:
        cf[m.group(1)] = cf.get(m.group(1), 0) + int(m.group(2))
names = ["cuMemGetAllocationGranularity", "cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate",
         "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess"]
for n in names:
    if not dev.get(n) or cf.get(n) != dev.get(n):
        sys.exit("%s: cufold counted %s, the device %s" % (n, cf.get(n), dev.get(n)))
print("-- %s: cufold's counts equal the device's" % ", ".join("%s %d" % (n, dev[n]) for n in names))
PY
