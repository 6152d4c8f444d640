# replay_faults.sh - a failure of cufold's own graph calls (SIMCUDA_FAIL at node creation,
# instantiation, launch, node patching) leaves the program's results unchanged over 20 seeds:
# the deferred work goes to the driver eagerly and the context passes through from then on, with
# exactly one warning, which also shows that the injected failure was reached. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

# rule, then the warning it must cause in at least one of the programs (allocstep moves
# pointers, so kernel and memset nodes are patched; train patches a scalar every step)
while read -r rule warning; do
	for mode in train allocstep; do
		SIMCUDA_FAIL=$rule same_output_over_seeds "$prog" "$mode" 10
	done
	total=0
	for mode in train allocstep; do
		SIMCUDA_FAIL=$rule LD_PRELOAD=$CUFOLD "$prog" $mode 10 >/dev/null 2>"$TMP/err" || fail "exited $?"
		n=$(grep -c "replay: " "$TMP/err")
		((n <= 1)) || { cat "$TMP/err"; fail "$rule ($mode): more than one warning"; }
		total=$((total + $(grep -c "replay: $warning" "$TMP/err")))
	done
	((total >= 1)) || fail "$rule: the failure was never reached (no warning '$warning')"
done <<'RULES'
cuGraphInstantiateWithFlags:1 building a graph failed
cuGraphAddKernelNode_v2:2 building a graph failed
cuGraphLaunch:1 launching a graph failed
cuGraphLaunch:4 launching a graph failed
cuGraphExecKernelNodeSetParams_v2:1 patching a graph node failed
cuGraphExecKernelNodeSetParams_v2:3 patching a graph node failed
cuGraphExecMemsetNodeSetParams:1 patching a graph node failed
RULES
# the stage buffers of pageable copies (sample_train copies its input from the stack); replay
# asks whether a stage buffer is free with cuEventQuery and never waits (replay_waits.sh)
for rule in cuMemAllocHost_v2:1 cuEventQuery:1; do
	SIMCUDA_FAIL=$rule same_output_over_seeds "$B/progs/sample_train" 8 4
	SIMCUDA_FAIL=$rule LD_PRELOAD=$CUFOLD "$B/progs/sample_train" 8 4 >/dev/null 2>"$TMP/err" || fail "exited $?"
	[[ $(grep -c "replay: " "$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "$rule: expected one warning"; }
done
note "failures of cufold's own calls leave results unchanged, with one warning each"
