#!/usr/bin/env bash
# shim_trace_counts.sh - in trace mode (and replay, which traces until replay exists) the
# calls cufold counts, by exported symbol, equal the calls the software device received
# (SIMCUDA_STATS "calls"): nothing a program does reaches the driver without passing through
# cufold, through any of the paths, and every call the driver receives goes through cufold. In mode off nothing is
# counted or printed. tests layer.
source "$(dirname "$0")/lib.sh"

# compare ERR STATS LABEL: cufold's "calls <symbol> <n>" lines against the device's counters
compare() {
	python3 - "$@" <<'PY'
import json, re, sys
err, stats, label = sys.argv[1:4]
dev = {k: v for k, v in json.load(open(stats))["calls"].items() if v}
cf, total, reported = {}, 0, None
for line in open(err):
    m = re.search(r"\] [ID] shim\.c:\d+: calls (\S+) (\d+)$", line.rstrip("\n"))
    if m:
        cf[m.group(1)] = cf.get(m.group(1), 0) + int(m.group(2))
        total += int(m.group(2))
    m = re.search(r": (\d+) driver calls intercepted through (\d+) entry points$", line.rstrip("\n"))
    if m:
        reported = (int(m.group(1)), int(m.group(2)))
if reported != (total, len(cf)):
    sys.exit("%s: summary line %s does not match the per-symbol lines (%d calls, %d symbols)"
             % (label, reported, total, len(cf)))
if cf != dev:
    for k in sorted(set(cf) | set(dev)):
        if cf.get(k) != dev.get(k):
            print("  %-40s cufold %6s  device %6s" % (k, cf.get(k, 0), dev.get(k, 0)))
    sys.exit("%s: cufold's counts differ from the device's" % label)
print("-- %s: %d calls over %d entry points, equal to the device's counters" % (label, total, len(cf)))
PY
}

check() { # label, mode, command...
	local label=$1 mode=$2
	shift 2
	rm -f "$TMP/stats.json"
	env SIMCUDA_STATS="$TMP/stats.json" CUFOLD_MODE="$mode" CUFOLD_LOG=debug "$@" >"$TMP/out" 2>"$TMP/err" ||
		{ cat "$TMP/err"; fail "$label failed"; }
	[[ -f "$TMP/stats.json" ]] || fail "$label: the device wrote no SIMCUDA_STATS"
	compare "$TMP/err" "$TMP/stats.json" "$label" || fail "$label: counts differ"
}

P="$ROOT/$B/plugins"
export ICPT_PLUGIN_DIR="$P"
for p in icpt_direct icpt_dlopen icpt_cudart icpt_threads icpt_procaddr; do
	[[ -x "$B/progs/$p" ]] || fail "$B/progs/$p not built"
	check "$p" trace env LD_PRELOAD="$CUFOLD" "$B/progs/$p"
done
check "icpt_ctor dlopen" trace env LD_PRELOAD="$CUFOLD" "$B/progs/icpt_ctor" dlopen
check "icpt_ctor preloaded" trace env LD_PRELOAD="$CUFOLD $P/icpt_ctor.so" "$B/progs/icpt_ctor" preloaded
check "icpt_cudart (replay)" replay env LD_PRELOAD="$CUFOLD" "$B/progs/icpt_cudart"

env CUFOLD_MODE=off CUFOLD_LOG=debug LD_PRELOAD="$CUFOLD" "$B/progs/icpt_cudart" >"$TMP/out" 2>"$TMP/err" ||
	fail "icpt_cudart failed in mode off"
! grep -q 'calls \|intercepted' "$TMP/err" || fail "mode off counted calls"
note "mode off counts nothing"
