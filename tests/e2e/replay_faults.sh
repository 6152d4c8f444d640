# replay_faults.sh - a failure of cufold's own graph calls (SIMCUDA_FAIL at instantiation,
# launch, node patching) leaves the program's results unchanged over 20 seeds: the deferred work
# goes to the driver eagerly and the context passes through from then on, with one warning.
# tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

for rule in cuGraphInstantiateWithFlags:1 cuGraphLaunch:1 cuGraphLaunch:4 cuGraphExecKernelNodeSetParams_v2:1 \
	cuGraphExecKernelNodeSetParams_v2:3 cuGraphExecMemsetNodeSetParams:1 cuGraphAddKernelNode_v2:2; do
	for mode in train allocstep; do
		SIMCUDA_FAIL=$rule same_output_over_seeds "$prog" "$mode" 10
	done
done
# exactly one warning, and the failure really happened (the rule was reached)
SIMCUDA_FAIL=cuGraphLaunch:2 LD_PRELOAD=$CUFOLD "$prog" train 10 >/dev/null 2>"$TMP/err" || fail "exited $?"
n=$(grep -c "replay: launching a graph failed" "$TMP/err")
[[ $n == 1 ]] || { cat "$TMP/err"; fail "expected one warning, got $n"; }
note "failures of cufold's own calls leave results unchanged"
