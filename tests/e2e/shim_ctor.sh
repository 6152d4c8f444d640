#!/usr/bin/env bash
# shim_ctor.sh - the process's first driver calls come from a shared library's constructor:
# run inside dlopen (the library is dlopen'ed by the program), and before main and before
# cufold's own constructors (the library is preloaded after cufold). tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_ctor"
lib="$ROOT/$B/plugins/icpt_ctor.so"
[[ -x "$prog" && -f "$lib" && -f "$CUFOLD" ]] || fail "$prog, $lib or $CUFOLD not built"
export ICPT_PLUGIN_DIR="$ROOT/$B/plugins"

same_output_over_seeds "$prog" dlopen
env LD_PRELOAD="$lib" "$prog" preloaded >"$TMP/plain" || fail "preloaded library failed without cufold"
env LD_PRELOAD="$CUFOLD $lib" CUFOLD_MODE=trace CUFOLD_LOG=debug "$prog" preloaded >"$TMP/hooked" 2>"$TMP/err" ||
	{ cat "$TMP/err"; fail "preloaded library failed with cufold"; }
cmp -s "$TMP/plain" "$TMP/hooked" || fail "output differs with cufold (preloaded library)"
grep -q 'calls cuInit 1$' "$TMP/err" || fail "the constructor's cuInit was not intercepted"
grep -q '^ctor rc 0 ' "$TMP/plain" || fail "the constructor's calls failed"
note "first calls from a constructor: intercepted, identical"
