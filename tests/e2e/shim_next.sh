#!/usr/bin/env bash
# shim_next.sh - cufold's dlsym keeps dlsym(RTLD_NEXT) relative to the real caller: a
# library preloaded after cufold that asks for the next definition of a name it defines itself
# gets the following library's, exactly as without cufold (a dlsym that called glibc from
# cufold's own code would return the caller's own definition). A library loaded before cufold
# that forwards to the driver with RTLD_NEXT reaches cufold's hook. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_next"
P="$ROOT/$B/plugins"
[[ -x "$prog" && -f "$P/icpt_next_a.so" && -f "$P/icpt_next_b.so" && -f "$CUFOLD" ]] || fail "not built"
export ICPT_PLUGIN_DIR="$P"

env LD_PRELOAD="$P/icpt_next_a.so $P/icpt_next_b.so" "$prog" preloaded >"$TMP/plain" || fail "failed without cufold"
grep -q '^next after a: b$' "$TMP/plain" || fail "the test itself is wrong: glibc did not find b after a"
env LD_PRELOAD="$CUFOLD $P/icpt_next_a.so $P/icpt_next_b.so" "$prog" preloaded >"$TMP/hooked" ||
	fail "failed with cufold"
cmp -s "$TMP/plain" "$TMP/hooked" || { diff "$TMP/plain" "$TMP/hooked"; fail "RTLD_NEXT resolved differently with cufold"; }

env "$prog" dlopen >"$TMP/plain" || fail "dlopen case failed without cufold"
env LD_PRELOAD="$CUFOLD" "$prog" dlopen >"$TMP/hooked" || fail "dlopen case failed with cufold"
cmp -s "$TMP/plain" "$TMP/hooked" || { diff "$TMP/plain" "$TMP/hooked"; fail "RTLD_NEXT from a dlopen'ed library differs"; }

# a before cufold: its RTLD_NEXT lookup of cuDriverGetVersion finds cufold's export
env LD_PRELOAD="$P/icpt_next_a.so $CUFOLD $P/icpt_next_b.so" CUFOLD_MODE=trace CUFOLD_LOG=debug "$prog" preloaded \
	>"$TMP/stacked" 2>"$TMP/err" || fail "failed with a before cufold"
grep -q '^driver version through RTLD_NEXT from a: 13000$' "$TMP/stacked" || fail "wrong driver version"
grep -q 'calls cuDriverGetVersion 1$' "$TMP/err" || { cat "$TMP/err"; fail "a's RTLD_NEXT call did not reach cufold"; }
note "RTLD_NEXT resolves relative to the caller"
