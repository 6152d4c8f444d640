#!/usr/bin/env bash
# shim_procaddr.sh - cuGetProcAddress (both ABIs) asked for every exported symbol at its
# version, one below and 13000, with each stream flag: with cufold each answer is cufold's hook
# of exactly the symbol the driver chose (the program prints which symbol each pointer is, by
# comparing with dlsym; the output must not change). tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_procaddr"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

run_plain "$TMP/plain" "$prog" || fail "icpt_procaddr failed without cufold"
[[ $(grep -c ' -> cu' "$TMP/plain") -gt 4000 ]] || fail "too few answers identified without cufold"
ICPT_EXPECT=cufold run_cufold "$TMP/hooked" "$prog" || fail "an answer is not cufold's hook"
cmp -s "$TMP/plain" "$TMP/hooked" || { diff "$TMP/plain" "$TMP/hooked" | head; fail "routing differs with cufold"; }
ICPT_EXPECT=driver CUFOLD_MODE=off run_cufold "$TMP/off" "$prog" || fail "in mode off an answer is not the driver's"
cmp -s "$TMP/plain" "$TMP/off" || fail "output differs with CUFOLD_MODE=off"
note "$(grep -c ' -> cu' "$TMP/plain") lookups routed to the exact variant"
