#!/usr/bin/env bash
# shim_dlopen.sh - a program that dlopens libcuda.so.1 and dlsyms each function: with cufold
# every pointer it gets is cufold's hook (or, in mode off, the driver's own), names outside the
# driver's are answered as glibc answers them, and the results are identical. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_dlopen"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"
run_plain "$TMP/plain" "$prog" || fail "icpt_dlopen failed without cufold"
ICPT_EXPECT=cufold run_cufold "$TMP/hooked" "$prog" || fail "a dlsym'ed driver pointer is not cufold's hook"
cmp -s "$TMP/plain" "$TMP/hooked" || fail "output differs with cufold"
ICPT_EXPECT=driver CUFOLD_MODE=off run_cufold "$TMP/off" "$prog" ||
	fail "in mode off a dlsym'ed pointer is not the driver's own"
cmp -s "$TMP/plain" "$TMP/off" || fail "output differs with CUFOLD_MODE=off"
grep -q '^dlsym cudnnCreate missing$' "$TMP/hooked" || fail "dlsym of a foreign name changed"
note "dlsym hands out hooks (driver pointers in mode off); foreign names untouched"
