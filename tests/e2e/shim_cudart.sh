#!/usr/bin/env bash
# shim_cudart.sh - a program that discovers the driver exactly as the CUDA runtime does
# (dlopen, dlsym of cuGetProcAddress_v2, then the runtime's 440 recorded lookups through the
# pointer it gets for cuGetProcAddress@12000): every pointer is cufold's hook of exactly the
# symbol the driver chose, per-thread and legacy launches go to different hooks and both work,
# and the results are identical. The real runtime's discovery runs in sim_cudart_train.sh (nvcc-built
# programs, 440 lookups by cudart 13.0 too); this test stays for what that one cannot check: the
# identity of every looked-up pointer, with cufold and in CUFOLD_MODE=off. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_cudart"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

same_output_over_seeds "$prog"
run_plain "$TMP/plain" "$prog" || fail "icpt_cudart failed without cufold"
grep -q '^lookups 440$' "$TMP/plain" || fail "did not replay the runtime's 440 lookups"
grep -q '^launch legacy=dlsym 1 per-thread=dlsym 1 differ 1$' "$TMP/plain" || fail "per-thread lookup wrong"
ICPT_EXPECT=cufold run_cufold "$TMP/hooked" "$prog" || fail "a looked-up pointer is not cufold's hook"
cmp -s "$TMP/plain" "$TMP/hooked" || { diff "$TMP/plain" "$TMP/hooked" | head; fail "output differs with cufold"; }
ICPT_EXPECT=driver CUFOLD_MODE=off run_cufold "$TMP/off" "$prog" || fail "in mode off a pointer is not the driver's"
cmp -s "$TMP/plain" "$TMP/off" || fail "output differs with CUFOLD_MODE=off"

# the two launches were counted on two different hooks
CUFOLD_MODE=trace CUFOLD_LOG=debug run_cufold "$TMP/trace" "$prog" 2>"$TMP/trace.err" || fail "trace run failed"
grep -q 'calls cuLaunchKernel_ptsz 1$' "$TMP/trace.err" || fail "the per-thread launch did not reach the _ptsz hook"
grep -Eq 'calls cuLaunchKernel [0-9]+$' "$TMP/trace.err" || fail "the legacy launches did not reach the legacy hook"
note "runtime-style discovery routed by identity"
