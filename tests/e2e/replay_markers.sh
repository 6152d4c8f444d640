# replay_markers.sh - cufold's NVTX markers as a tool sees them: with NVTX_INJECTION64_PATH naming a
# small injection library (tests/plugins/nvtx_inject.c, which logs every NVTX domain call to
# $NVTX_INJECT_OUT), rpl_loop train shows, in the "cufold" domain, a range per template build and
# per segment launch, balanced pushes and pops, and under an injected graph launch failure the
# fallback mark and the eager flush's range; without the variable nothing is written; the program's
# output is the same in every case. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
inject=$ROOT/$B/plugins/nvtx_inject.so
[[ -x $prog ]] || fail "$prog is not built"
[[ -f $inject ]] || fail "$inject is not built"
export CUFOLD_MODE=replay

run_plain "$TMP/plain" "$prog" train 10 || fail "rpl_loop train exited $? without cufold"

# a tool attached: the ranges are there, in cufold's domain
NVTX_INJECTION64_PATH=$inject NVTX_INJECT_OUT=$TMP/nvtx run_cufold "$TMP/tool" "$prog" train 10 ||
	fail "rpl_loop train exited $? under cufold with an NVTX tool"
cmp -s "$TMP/plain" "$TMP/tool" || fail "the output changed with an NVTX tool attached"
[[ -s $TMP/nvtx ]] || fail "the NVTX tool recorded nothing"
grep -qx 'create cufold' "$TMP/nvtx" || fail "no cufold domain was created"
[[ $(grep -c '^create ' "$TMP/nvtx") == 1 ]] || fail "the domain was created more than once"
grep -Eq '^push cufold cufold: build shape [0-9]+$' "$TMP/nvtx" || fail "no template build range"
grep -Eq '^push cufold cufold: launch shape [0-9]+ segment [0-9]+ \([0-9]+ ops\)$' "$TMP/nvtx" ||
	fail "no segment launch range"
grep -v '^\(create\|push\|pop\|mark\) cufold' "$TMP/nvtx" && fail "an event outside the cufold domain"
pushes=$(grep -c '^push ' "$TMP/nvtx"); pops=$(grep -c '^pop ' "$TMP/nvtx")
[[ $pushes == "$pops" ]] || fail "$pushes pushes but $pops pops"
note "tool attached: $pushes ranges ($(grep -c 'launch shape' "$TMP/nvtx") launches, $(grep -c 'build shape' "$TMP/nvtx") builds), output unchanged"

# a failed graph launch: the fallback is marked and the eager flush is a range inside the launch's
: >"$TMP/nvtx"
SIMCUDA_FAIL=cuGraphLaunch:2 NVTX_INJECTION64_PATH=$inject NVTX_INJECT_OUT=$TMP/nvtx \
	run_cufold "$TMP/fail" "$prog" train 10 2>/dev/null || fail "rpl_loop train exited $? with a failed launch"
cmp -s "$TMP/plain" "$TMP/fail" || fail "the output changed with a failed launch"
grep -qx 'mark cufold cufold: fallback: LAUNCH' "$TMP/nvtx" || fail "no LAUNCH fallback mark"
grep -qx 'mark cufold cufold: passthrough: launching a graph failed' "$TMP/nvtx" || fail "no passthrough mark"
grep -Eq '^push cufold cufold: flush [0-9]+ ops \(LAUNCH\)$' "$TMP/nvtx" || fail "no range for the eager flush"
note "failed launch: fallback and passthrough marked, eager flush ranged"

# no tool: nothing written, same output
NVTX_INJECT_OUT=$TMP/none run_cufold "$TMP/notool" "$prog" train 10 || fail "rpl_loop train exited $? under cufold"
[[ -e $TMP/none ]] && fail "NVTX events were written without NVTX_INJECTION64_PATH"
cmp -s "$TMP/plain" "$TMP/notool" || fail "the output changed under cufold without a tool"
note "no tool: nothing written, output unchanged"
exit 0
