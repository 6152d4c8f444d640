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
