# replay_strict.sh - CUFOLD_STRICT=1: a failure of cufold's own (an injected cuGraphLaunch failure:
# a LAUNCH fallback and a context sent to passthrough) or a failed rewrite guard (rw_slice_glue
# moving) makes the process exit 70 with an error on stderr, while the program's output stays
# identical to its output without cufold; without CUFOLD_STRICT the same runs exit 0; a clean run
# exits 0 under CUFOLD_STRICT=1; a program's own non-zero status is kept. tests layer.
source "$(dirname "$0")/lib.sh"
loop=$B/progs/rpl_loop
glue=$B/progs/rw_slice_glue
[[ -x $loop && -x $glue ]] || fail "$loop or $glue is not built"
export CUFOLD_MODE=replay

# run_strict STATUS VALUE prog args: stdout to $TMP/out, stderr to $TMP/err, the status must be STATUS
run_strict() {
	local want=$1 value=$2 rc=0; shift 2
	CUFOLD_STRICT=$value run_cufold "$TMP/out" "$@" 2>"$TMP/err" || rc=$?
	[[ $rc == "$want" ]] || { cat "$TMP/err" >&2; fail "CUFOLD_STRICT=$value $*: exit $rc, expected $want"; }
}

run_plain "$TMP/loop.plain" "$loop" train 10 || fail "rpl_loop train exited $? without cufold"
SIMCUDA_FAIL=cuGraphLaunch:2 run_plain "$TMP/loop.plainfail" "$loop" train 10 2>/dev/null ||
	fail "rpl_loop train exited $? without cufold with SIMCUDA_FAIL (cufold never calls cuGraphLaunch there)"

export SIMCUDA_FAIL=cuGraphLaunch:2
run_strict 70 1 "$loop" train 10
cmp -s "$TMP/loop.plain" "$TMP/out" || fail "strict: the program's output changed after a failed launch"
grep -q ' E .*CUFOLD_STRICT: a LAUNCH fallback' "$TMP/err" || fail "strict: no error line for the LAUNCH fallback"
grep -q ' E .*CUFOLD_STRICT: a context sent to passthrough' "$TMP/err" || fail "strict: no error line for passthrough"
grep -q ' E .*exits with status 70' "$TMP/err" || fail "strict: no error line saying why the status is 70"
[[ $(grep -c 'CUFOLD_STRICT: a LAUNCH fallback' "$TMP/err") == 1 ]] || fail "strict: the LAUNCH error was not logged once"
run_strict 0 "" "$loop" train 10
cmp -s "$TMP/loop.plain" "$TMP/out" || fail "not strict: the program's output changed after a failed launch"
grep -q ' E ' "$TMP/err" && fail "not strict: an error line"
run_strict 0 0 "$loop" train 10
note "failed launch: 70 and error lines with CUFOLD_STRICT=1, 0 without, output unchanged"
unset SIMCUDA_FAIL

# a failed rewrite guard
run_plain "$TMP/glue.plain" "$glue" moving 24 || fail "rw_slice_glue moving exited $? without cufold"
CUFOLD_OPT=1 run_strict 70 1 "$glue" moving 24
cmp -s "$TMP/glue.plain" "$TMP/out" || fail "strict: rw_slice_glue's output changed"
grep -q ' E .*CUFOLD_STRICT: a GUARD fallback' "$TMP/err" || fail "strict: no error line for the GUARD fallback"
CUFOLD_OPT=1 run_strict 0 "" "$glue" moving 24
note "failed guard: 70 with CUFOLD_STRICT=1, 0 without"

# clean runs exit 0 (replayed, and rewritten with steady guards)
run_strict 0 1 "$loop" train 10
cmp -s "$TMP/loop.plain" "$TMP/out" || fail "strict clean run: output changed"
grep -q ' E ' "$TMP/err" && fail "strict clean run: an error line"
CUFOLD_OPT=1 run_strict 0 1 "$glue" steady 24
note "clean runs: 0 with CUFOLD_STRICT=1"

# the program's own failure keeps its status (1 from a failed copy after the failed launch)
SIMCUDA_FAIL=cuGraphLaunch:2,cuMemcpyDtoH_v2:8 run_strict 1 1 "$loop" train 10
grep -q 'CUFOLD_STRICT: a LAUNCH fallback' "$TMP/err" || fail "strict: the launch did not fail before the copy"
note "the program's own status 1 is kept"

# a bad value is reported and the default (0) used
SIMCUDA_FAIL=cuGraphLaunch:2 run_strict 0 yes "$loop" train 10
grep -q 'CUFOLD_STRICT=yes is not valid (accepted: 0, 1); using 0' "$TMP/err" || fail "bad CUFOLD_STRICT not reported"
note "CUFOLD_STRICT=yes reported, default used"
exit 0
