# rewrite_identity_cat.sh - the identity-cat rule end to end: results bit for bit the same as
# without cufold over 20 seeds (steady views, views that move so that the guard fails mid-run,
# views with gaps that are never a copy); the device's own counters show the 3 `cat` launches of a
# step executed as copies at CUFOLD_OPT=1, left alone with CUFOLD_RULES=-identity-cat and for the
# near miss. tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rw_identity_cat
[[ -x $prog ]] || fail "$prog is not built"
grep -aq 'identity-cat' "$CUFOLD" || fail "the identity-cat rule is not in $CUFOLD"
export CUFOLD_MODE=replay

CUFOLD_OPT=1 same_output_over_seeds "$prog" steady 12
CUFOLD_OPT=1 same_output_over_seeds "$prog" moving 24
CUFOLD_OPT=1 same_output_over_seeds "$prog" nearmiss 12
CUFOLD_OPT=1 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the reversed or overlapping views did not fail a guard"

# cat launches and copies executed per steady-state step (lib.sh's count_steps)
CUFOLD_OPT=1 CUFOLD_RULES= count_steps on cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES=-identity-cat count_steps off cufold "$prog" steady @STEPS@
CUFOLD_OPT=1 CUFOLD_RULES= count_steps near cufold "$prog" nearmiss @STEPS@
want_per_step on kernel:cat 0
want_per_step on copies_executed 3
want_per_step off kernel:cat 3
want_per_step off copies_executed 0
want_per_step near kernel:cat 3
want_per_step near copies_executed 0
note "each cat of 8 abutting views executed as one copy; the near miss left alone"
