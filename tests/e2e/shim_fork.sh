#!/usr/bin/env bash
# shim_fork.sh - after fork the child keeps launching through cufold (and the parent after
# it); results are identical, and each process reports only its own calls. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_fork"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"
run_plain "$TMP/plain" "$prog" || fail "icpt_fork failed without cufold"
CUFOLD_MODE=trace CUFOLD_LOG=debug run_cufold "$TMP/hooked" "$prog" 2>"$TMP/err" || fail "icpt_fork failed with cufold"
cmp -s "$TMP/plain" "$TMP/hooked" || fail "output differs with cufold"
# two reports, one per process; the child's launches (25 rounds x 2) are its own
[[ $(grep -c 'driver calls intercepted' "$TMP/err") == 2 ]] || { cat "$TMP/err"; fail "expected one report per process"; }
pids=$(grep -o 'cufold\[[0-9]*' "$TMP/err" | sort -u | wc -l)
[[ $pids == 2 ]] || fail "expected reports from two processes, got $pids"
grep -q 'calls cuLaunchKernel 50$' "$TMP/err" || { cat "$TMP/err"; fail "the child's 50 launches were not counted as its own"; }
grep -q 'calls cuLaunchKernel 60$' "$TMP/err" || fail "the parent's 60 launches were not counted"
note "the child keeps working and counts only its own calls"
