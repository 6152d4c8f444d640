#!/usr/bin/env bash
# shim_threads.sh - 8 threads make the process's first driver calls at once (racing through
# cufold's initialization) and then launch concurrently; results are identical with cufold, over
# seeds and over repeated runs. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_threads"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"
run_plain "$TMP/plain" "$prog" || fail "icpt_threads failed without cufold"
for ((i = 0; i < 20; i++)); do
	CUFOLD_MODE=trace run_cufold "$TMP/run" "$prog" || fail "run $i failed with cufold"
	cmp -s "$TMP/plain" "$TMP/run" || fail "run $i differs with cufold"
done
note "20 more racing runs identical"
