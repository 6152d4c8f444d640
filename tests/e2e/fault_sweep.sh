# fault_sweep.sh - scripts/fault-sweep --quick: every driver entry point that the test programs
# and the workloads call (cufold's own calls included) is failed at a few call numbers without
# and with cufold; cufold must never turn a fault into a silent wrong result or a crash. (The
# whole sweep, with CUFOLD_OPT=0 and more call numbers, is `make fault-sweep`.) tests layer.
source "$(dirname "$0")/lib.sh"
[[ -f $CUFOLD ]] || fail "$CUFOLD is not built"

if [[ ${SAN:-} == thread ]]; then
	# its runs are single-threaded error paths, which SAN=address and SAN=undefined sweep; under
	# TSan the quick sweep of the test programs alone outlasts the runner's 300 s (measured: timed out)
	echo "under ThreadSanitizer the sweep outlasts the 300 s timeout; ASan and UBSan sweep these paths"
	exit 77
fi
filters=()
if [[ -n ${SAN:-} ]]; then
	# instrumented runs are several times slower: the test programs only, not the workloads
	filters=(rpl_loop sample_train)
	export FAULT_SWEEP_TIMEOUT=${FAULT_SWEEP_TIMEOUT:-120}
	note "SAN=$SAN: the workloads are left out"
fi
B=$B FAULT_SWEEP_OUT="$TMP/out" python3 scripts/fault-sweep --quick "${filters[@]}" >"$TMP/sweep" 2>&1
rc=$?
cat "$TMP/sweep"
summary=$(tail -n 1 "$TMP/sweep")
[[ $summary =~ ^([0-9]+)\ injections:\ ([0-9]+)\ silent\ wrong\ results,\ ([0-9]+)\ crashes ]] ||
	fail "fault-sweep printed no summary (exit $rc)"
injections=${BASH_REMATCH[1]} silent=${BASH_REMATCH[2]} crashes=${BASH_REMATCH[3]}
((silent == 0)) || fail "$silent injected faults gave a silent wrong result with cufold"
((crashes == 0)) || fail "$crashes injected faults crashed or hung the program with cufold"
((rc == 0)) || fail "fault-sweep exited $rc"

# The sweep has teeth: it reached the programs' own calls (without cufold they fail), and
# cufold's own calls (graph building and launching) were failed too.
((injections > 500)) || fail "only $injections injections"
python3 - "$TMP/out/fault-sweep.json" <<'PY' || fail "fault-sweep.json does not show the faults reached"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["table"]
assert d["mode"] == "quick" and not d["setup_errors"], d["setup_errors"]
assert t["cuLaunchKernel"]["both-failed"] > 0, t["cuLaunchKernel"]
for e in ("cuGraphLaunch", "cuGraphInstantiateWithFlags", "cuGraphAddKernelNode_v2"):
    assert t[e]["injections"] > 0 and t[e]["same"] > 0, (e, t.get(e))
PY
note "fault sweep: $injections injections, no silent wrong result, no crash"
