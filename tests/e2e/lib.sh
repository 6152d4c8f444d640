# lib.sh - helpers for end-to-end test scripts (sourced). tests layer.
# Environment from tests/run: ROOT (repository), B (build dir), LD_LIBRARY_PATH (software device).
set -u
: "${ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${B:=build}"
cd "$ROOT"
export LD_LIBRARY_PATH="$ROOT/$B/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUFOLD="$ROOT/$B/libcufold.so"
SEEDS=${SEEDS:-20}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

# gate_off_under_tsan: for a test that counts replays. The gate charges replayed windows
# cufold's own measured CPU time per op (replay/gate.c), which ThreadSanitizer multiplies while
# the software device's modeled clock stays the same, so under TSan the gate turns off templates
# that pay in every other build. CUFOLD_GATE=0 (README) keeps measuring but never turns replay
# off; a test that sets CUFOLD_GATE itself keeps its own.
gate_off_under_tsan() {
	[[ ${SAN:-} == thread && -z ${CUFOLD_GATE+set} ]] || return 0
	export CUFOLD_GATE=0
	note "SAN=thread: CUFOLD_GATE=0 (the gate charges cufold's own CPU time, which TSan multiplies)"
}

# run_plain OUT prog args...   run without cufold, stdout to OUT
run_plain() { local out=$1; shift; env -u LD_PRELOAD "$@" >"$out"; }
# run_cufold OUT prog args...  run with cufold preloaded for the child only
run_cufold() { local out=$1; shift; env LD_PRELOAD="$CUFOLD" "$@" >"$out"; }

# same_output_over_seeds prog args...: the program's stdout is identical without and with
# cufold, for seeds 1..SEEDS of the software device's random schedule.
same_output_over_seeds() {
	local s
	for ((s = 1; s <= SEEDS; s++)); do
		SIMCUDA_SEED=$s run_plain "$TMP/plain.$s" "$@" || fail "$* exited $? without cufold (seed $s)"
		SIMCUDA_SEED=$s run_cufold "$TMP/cufold.$s" "$@" || fail "$* exited $? with cufold (seed $s)"
		cmp -s "$TMP/plain.$s" "$TMP/cufold.$s" || { diff "$TMP/plain.$s" "$TMP/cufold.$s" | head; fail "$*: output differs with cufold (seed $s)"; }
	done
	note "$*: identical over $SEEDS seeds"
}

# Counters of a steady-state step, as the rewrite tests and the benchmark measure them: the
# program runs twice, STEPS_SHORT and STEPS_LONG steps, and the difference of the software
# device's counters over the difference of steps is one step after warm-up (set-up, warm-up
# and the final hashing cancel out).
STEPS_SHORT=6
STEPS_LONG=16

# count_steps NAME plain|cufold prog args...: both runs, every argument @STEPS@ replaced by the
# step count; counters in $TMP/NAME.N.stats (N = 6, 16), stdout in $TMP/NAME.N.out and, under
# cufold, its report in $TMP/NAME.N.report. Variables set before the call
# (CUFOLD_OPT=2 count_steps ...) reach both runs.
count_steps() {
	local name=$1 how=$2 n a
	shift 2
	for n in $STEPS_SHORT $STEPS_LONG; do
		local args=()
		for a in "$@"; do args+=("${a//@STEPS@/$n}"); done
		if [[ $how == plain ]]; then
			SIMCUDA_STATS=$TMP/$name.$n.stats run_plain "$TMP/$name.$n.out" "${args[@]}" ||
				fail "${args[*]} exited $? without cufold"
		else
			SIMCUDA_STATS=$TMP/$name.$n.stats CUFOLD_REPORT=$TMP/$name.$n.report \
				run_cufold "$TMP/$name.$n.out" "${args[@]}" ||
				fail "${args[*]} exited $? with cufold (CUFOLD_OPT=${CUFOLD_OPT-} CUFOLD_RULES=${CUFOLD_RULES-})"
		fi
	done
}

# per_step NAME COUNTER: prints COUNTER per step of count_steps NAME ("%g": 8, 0.5): a key of the
# counters' totals (copies_executed, memsets_executed, ...) or kernel:NAME, the launches of that
# kernel executed.
per_step() {
	python3 - "$TMP/$1" "$2" "$STEPS_SHORT" "$STEPS_LONG" <<'PY'
import json, sys
base, what, short, long_ = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def count(n):
    s = json.load(open("%s.%d.stats" % (base, n)))
    return s["kernels"].get(what[7:], 0) if what.startswith("kernel:") else s["totals"][what]
print("%g" % ((count(long_) - count(short)) / (long_ - short)))
PY
}

# want_per_step NAME COUNTER EXPECTED: fails unless per_step NAME COUNTER prints EXPECTED.
want_per_step() {
	local got
	got=$(per_step "$1" "$2") || fail "$1: cannot read the counters"
	[[ $got == "$3" ]] || fail "$1: $2 per step is $got, expected $3"
	note "$1: $2 per step $got"
}

# no_silent_wrong_result "N ..." prog args...: for each N, cuLaunchKernel's Nth call fails with
# and without cufold; the program must end the same way: the fault-free output, the output it
# gives without cufold, or a failure; never exit 0 under cufold with a result of its own, and
# never exit 0 with another result where it fails without cufold.
no_silent_wrong_result() {
	local ns=$1 n prc crc
	shift
	run_plain "$TMP/nsw.ok" "$@" || fail "$* exited $?"
	for n in $ns; do
		prc=0 crc=0
		SIMCUDA_FAIL=cuLaunchKernel:$n run_plain "$TMP/nsw.p.$n" "$@" 2>/dev/null || prc=$?
		SIMCUDA_FAIL=cuLaunchKernel:$n run_cufold "$TMP/nsw.c.$n" "$@" 2>/dev/null || crc=$?
		if ((crc == 0)); then
			cmp -s "$TMP/nsw.c.$n" "$TMP/nsw.ok" || cmp -s "$TMP/nsw.c.$n" "$TMP/nsw.p.$n" ||
				fail "cuLaunchKernel:$n: exit 0 with a result of its own under cufold"
		fi
		((prc != 0 && crc == 0)) && ! cmp -s "$TMP/nsw.c.$n" "$TMP/nsw.ok" && fail "cuLaunchKernel:$n: silent wrong result"
	done
	return 0
}
