# sim_interleaving.sh - the software device's random schedule exposes a missing dependency:
# without an event wait some seed gives the wrong result; with it every seed is right; the
# in-order schedule is deterministic. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/sim_race
wrong=0
for s in $(seq 1 20); do
	out=$(SIMCUDA_SEED=$s $prog nowait) || fail "sim_race nowait exited $? (seed $s)"
	[[ $out == out=2.0 || $out == out=0.0 ]] || fail "unexpected output '$out'"
	[[ $out == out=0.0 ]] && wrong=$((wrong + 1))
	out=$(SIMCUDA_SEED=$s $prog wait) || fail "sim_race wait exited $? (seed $s)"
	[[ $out == out=2.0 ]] || fail "with the event wait, seed $s gave '$out'"
done
((wrong > 0)) || fail "no seed of 20 exposed the missing event wait"
((wrong < 20)) || fail "every seed ran the reader first: the schedule is not random"
note "missing wait exposed by $wrong of 20 seeds; with the wait all 20 right"
out=$(SIMCUDA_SCHEDULE=inorder $prog nowait)
[[ $out == out=2.0 ]] || fail "in-order schedule gave '$out'"
