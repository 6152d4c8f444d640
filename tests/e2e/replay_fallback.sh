# replay_fallback.sh - replay stays bit-identical to the program alone over 20 seeds on every
# program shape that makes it fall back or take a special path: two alternating shapes, moving
# pointers (allocation per step), a conditional extra kernel mid-window, two streams with events,
# the legacy and per-thread default streams, the program's own stream capture, a barrier kernel
# mid-window, a freed and replaced buffer, pageable host copies, host threads, arguments that
# change on every call, every way of launching a kernel and of copying. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

for mode in alternate allocstep mismatch twostream defstreams owncapture barrier free pageable threads churn launches; do
	same_output_over_seeds "$prog" "$mode" 12
done
# short segments and a warm-up of one move every cut and every template boundary around
CUFOLD_SEGMENT=5 CUFOLD_WARMUP=1 same_output_over_seeds "$prog" mismatch 12
CUFOLD_SEGMENT=3 CUFOLD_WARMUP=1 same_output_over_seeds "$prog" alternate 12
CUFOLD_SEGMENT=7 CUFOLD_WARMUP=1 same_output_over_seeds "$prog" allocstep 12
