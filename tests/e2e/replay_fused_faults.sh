# replay_fused_faults.sh - failures around horizontal fusion (batch-kernel, level 1) leave the
# program's results unchanged: (1) the variant's JIT load failing (each of cufold's own
# cuModuleLoadData calls in turn) means no fusion for that kernel, said in the report
# (kernels_apart.no_variant), with no warning; (2) a graph holding a fused launch failing to
# launch or to be patched falls back to the program's own launches, with one warning. A fused
# launch only ever runs inside a graph: an eager flush submits the program's own deferred ops
# (launch.c flush_ops), so a failure is never reported against the variant. (3) Around the
# replayed steps, a failed launch of the program's never yields a silent wrong result with
# fusion on. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=1

# fused_report REPORT: "RULES NO_VARIANT" of the report's templates (batch-kernel groups fused,
# launches kept apart because the kernel has no variant)
fused_report() {
	python3 - "$1" <<'PY'
import json, sys
t = [x["rewrite"] for x in json.load(open(sys.argv[1]))["replay"]["templates"] if x.get("rewrite")]
print(sum(r["rules"].get("batch-kernel", 0) for r in t), sum(r["kernels_apart"].get("no_variant", 0) for r in t))
PY
}

# precondition: the rule fuses in this program, or nothing below tests fusion
CUFOLD_REPORT="$TMP/ok.json" run_cufold "$TMP/ok.out" "$prog" train 10 || fail "train exited $?"
read -r fused apart < <(fused_report "$TMP/ok.json")
((fused >= 1)) || fail "batch-kernel fused nothing in rpl_loop train (precondition)"
run_plain "$TMP/plain.out" "$prog" train 10 || fail "train exited $? without cufold"

# (1) cufold's own module loads are the ones after the program's
SIMCUDA_STATS="$TMP/plain.stats" run_plain "$TMP/p" "$prog" train 10 || fail "train exited $?"
SIMCUDA_STATS="$TMP/cufold.stats" run_cufold "$TMP/c" "$prog" train 10 || fail "train exited $?"
loads() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['calls'].get('cuModuleLoadData', 0))" "$1"; }
first=$(($(loads "$TMP/plain.stats") + 1)) last=$(loads "$TMP/cufold.stats")
((last >= first)) || fail "cufold loaded no module of its own (variants: $first..$last)"
refused=0
for ((n = first; n <= last; n++)); do
	SIMCUDA_FAIL=cuModuleLoadData:$n CUFOLD_REPORT="$TMP/l.json" \
		run_cufold "$TMP/l.out" "$prog" train 10 2>"$TMP/l.err" || fail "cuModuleLoadData:$n: exited $?"
	cmp -s "$TMP/l.out" "$TMP/plain.out" || fail "cuModuleLoadData:$n: output differs"
	! grep -q "cufold.* W " "$TMP/l.err" || { cat "$TMP/l.err"; fail "cuModuleLoadData:$n: a warning for a refused fusion"; }
	read -r f a < <(fused_report "$TMP/l.json")
	((a > apart)) && refused=$((refused + 1))
done
((refused >= 1)) || fail "no failed variant load showed in the report's no_variant count"
note "a variant's failed JIT load: no fusion for it, results unchanged ($refused of $((last - first + 1)) loads reported)"

# (2) graphs holding the fused launch
for rule in cuGraphLaunch:1 cuGraphLaunch:2 cuGraphLaunch:6:CUDA_ERROR_LAUNCH_FAILED \
	cuGraphInstantiateWithFlags:1 cuGraphExecKernelNodeSetParams_v2:1 cuGraphExecKernelNodeSetParams_v2:4; do
	SIMCUDA_FAIL=$rule same_output_over_seeds "$prog" train 10
	SIMCUDA_FAIL=$rule run_cufold "$TMP/g.out" "$prog" train 10 2>"$TMP/g.err" || fail "$rule: exited $?"
	n=$(grep -c "replay: " "$TMP/g.err")
	((n == 1)) || { cat "$TMP/g.err"; fail "$rule: expected one warning, got $n"; }
done
note "a fused graph's failed launch, build or patch: the program's own launches, one warning"

# (3) no silent wrong result with fusion on
no_silent_wrong_result "60 100 120 129 140 160 180" "$prog" mismatch 8
note "no silent wrong result around fused replayed steps"
