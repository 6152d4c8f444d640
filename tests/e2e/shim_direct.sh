#!/usr/bin/env bash
# shim_direct.sh - a program linked directly against libcuda.so.1 (and calling
# cuGetProcAddress by name with explicit versions) computes the same bits with cufold preloaded,
# in every mode, over the software device's seeds. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_direct"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"
SIMCUDA_SEED=3 run_plain "$TMP/plain" "$prog" || fail "icpt_direct failed without cufold"
for mode in off trace replay; do
	SIMCUDA_SEED=3 CUFOLD_MODE=$mode run_cufold "$TMP/$mode" "$prog" 2>"$TMP/$mode.err" ||
		fail "icpt_direct failed with CUFOLD_MODE=$mode"
	cmp -s "$TMP/plain" "$TMP/$mode" || fail "output differs with CUFOLD_MODE=$mode"
	[[ ! -s "$TMP/$mode.err" ]] || { cat "$TMP/$mode.err"; fail "cufold printed at the default log level ($mode)"; }
done
note "identical in modes off, trace and replay"
