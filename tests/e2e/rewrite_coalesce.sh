# rewrite_coalesce.sh - the coalesce rule end to end: results bit for bit the same as without
# cufold over 20 seeds at CUFOLD_OPT=1 (steady buffers, and buffers that move so that guards
# fail mid-run, and buffers that cycle through three sets) and at CUFOLD_OPT=0; the device's own counters show the 8 slice copies of a
# step executed as 1 at CUFOLD_OPT=1, as 8 at CUFOLD_OPT=0 and with CUFOLD_RULES=-coalesce,-batch-copy
# (without coalesce alone, batch-copy takes the 8 copies into one launch of its kernel).
# tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rw_coalesce
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay

CUFOLD_OPT=1 same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=1 same_output_over_seeds "$prog" moving 24
# the moving run took the guard path: a template was retired because a guard failed
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -q 'a rewrite guard failed' "$TMP/moving.json" || fail "no template retired by a failed guard in the moving run"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the failed guard was not counted as a GUARD fallback"
CUFOLD_OPT=0 same_output_over_seeds "$prog" moving 24
# buffers that cycle through three sets (copy_loop move): every set passes its guards once and
# is remembered (rw_run_bindings_gen), and each launch patches the nodes of the set before it
CUFOLD_OPT=1 same_output_over_seeds "$B/progs/copy_loop" move 12

# copies executed per steady-state step (lib.sh's count_steps)
CUFOLD_OPT=1 CUFOLD_RULES= count_steps o1 cufold "$prog" steady @STEPS@
CUFOLD_OPT=0 CUFOLD_RULES= count_steps o0 cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES=-coalesce,-batch-copy count_steps off cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES=-coalesce count_steps nocoalesce cufold "$prog" steady @STEPS@
count_steps plain plain "$prog" steady @STEPS@
want_per_step plain copies_executed 8
want_per_step o0 copies_executed 8
want_per_step o1 copies_executed 1
want_per_step off copies_executed 8
# without coalesce alone, batch-copy takes the 8 copies into one launch of its kernel
want_per_step nocoalesce copies_executed 0
want_per_step nocoalesce kernel:cufold_batch_copy 1
note "8 slice copies per step executed as 1 at CUFOLD_OPT=1"
