#!/usr/bin/env bash
# sim_entry_points.sh - a loop whose kernels come from a JIT-linked module, which asks the occupancy
# calculator for its block size in the middle of every step and moves data through CUDA arrays
# with 2-D and 3-D copies (tests/progs/entry_points.c) computes the same bits with cufold
# replaying, at every CUFOLD_OPT, over the software device's seeds; the occupancy queries do not
# end windows (cufold replays whole steps), and every new entry point the program calls passes
# through cufold (trace counts equal the device's). tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/entry_points"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
export CUFOLD_MODE=replay

same_output_over_seeds "$prog" 30
for opt in 0 2; do
	CUFOLD_OPT=$opt SEEDS=5 same_output_over_seeds "$prog" 30
done

SIMCUDA_SEED=5 CUFOLD_REPORT="$TMP/report.json" run_cufold "$TMP/out" "$prog" 30 || fail "entry_points exited $?"
python3 - "$TMP/report.json" <<'PY' || fail "cufold's report: windows ended by the queries, or no replay"
import json, sys
r = json.load(open(sys.argv[1]))
um = r["boundaries"]["UNMODELED"]["windows_closed"]
if um:
    sys.exit("%d windows ended by calls cufold does not model (the occupancy queries must not)" % um)
rp = r["replay"]
if rp["graph_launches"] == 0 or rp["ops_replayed"] == 0:
    sys.exit("nothing replayed: %s" % {k: v for k, v in rp.items() if not isinstance(v, (list, dict))})
print("-- no window ended by the occupancy queries; %d ops replayed in %d graph launches"
      % (rp["ops_replayed"], rp["graph_launches"]))
PY

env SIMCUDA_STATS="$TMP/stats.json" CUFOLD_MODE=trace CUFOLD_LOG=debug LD_PRELOAD="$CUFOLD" "$prog" 6 \
	>"$TMP/trace.out" 2>"$TMP/trace.err" || { cat "$TMP/trace.err"; fail "entry_points failed in trace mode"; }
python3 - "$TMP/trace.err" "$TMP/stats.json" <<'PY' || fail "trace counts of the new entry points differ from the device's"
import json, re, sys
dev = json.load(open(sys.argv[2]))["calls"]
cf = {}
for line in open(sys.argv[1]):
    m = re.search(r"\] [ID] shim\.c:\d+: calls (\S+) (\d+)$", line.rstrip("\n"))
    if m:
        cf[m.group(1)] = cf.get(m.group(1), 0) + int(m.group(2))
names = ["cuLinkCreate_v2", "cuLinkAddData_v2", "cuLinkComplete", "cuLinkDestroy",
         "cuOccupancyMaxPotentialBlockSize", "cuArrayCreate_v2", "cuArray3DCreate_v2", "cuArrayDestroy",
         "cuMemcpy2DAsync_v2", "cuMemcpy3DAsync_v2"]
for n in names:
    if not dev.get(n) or cf.get(n) != dev.get(n):
        sys.exit("%s: cufold counted %s, the device %s" % (n, cf.get(n), dev.get(n)))
print("-- %s: cufold's counts equal the device's" % ", ".join("%s %d" % (n, dev[n]) for n in names))
PY
