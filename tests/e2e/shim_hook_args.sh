#!/usr/bin/env bash
# shim_hook_args.sh - the hooks that pass a call on with arguments read back from cufold's record
# of it (shim/engine.h: SHIM_OP_HOOK_C: 1-D copies, peer copies, 1-D memsets, plain and
# cooperative launches, each in every form) give the driver the program's arguments: the
# program (tests/progs/hook_args.c) calls each once a step with arguments that differ from the
# others', and its checksums are identical without cufold, in trace mode (every call passes on)
# and in replay (the calls of later steps deferred and replayed), over seeds. Also every entry
# point reached its own hook once a step (CUFOLD_LOG=debug's calls by symbol at exit). shim layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/hook_args"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"

for mode in trace replay; do
	CUFOLD_MODE=$mode same_output_over_seeds "$prog" 6
done
run_plain "$TMP/plain" "$prog" 12 || fail "hook_args exited $? without cufold"
CUFOLD_MODE=replay CUFOLD_LOG=debug CUFOLD_LOG_FILE="$TMP/log" run_cufold "$TMP/cufold" "$prog" 12 ||
	fail "hook_args exited $? with cufold"
cmp -s "$TMP/plain" "$TMP/cufold" || fail "hook_args 12: output differs with cufold in replay"
python3 - "$TMP/log" <<'PY' || fail "the hooks' calls are not counted as expected"
import re, sys
calls = {}
for line in open(sys.argv[1]):
    m = re.search(r"calls (\w+) (\d+)$", line.strip())
    if m:
        calls[m.group(1)] = int(m.group(2))
names = ["cuMemcpy", "cuMemcpy_ptds", "cuMemcpyAsync", "cuMemcpyAsync_ptsz",
         "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz",
         "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz",
         "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz",
         "cuMemcpyPeer", "cuMemcpyPeer_ptds", "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz",
         "cuMemsetD8_v2", "cuMemsetD8_v2_ptds", "cuMemsetD16_v2", "cuMemsetD16_v2_ptds",
         "cuMemsetD32_v2", "cuMemsetD32_v2_ptds", "cuMemsetD8Async", "cuMemsetD8Async_ptsz",
         "cuMemsetD16Async", "cuMemsetD16Async_ptsz", "cuMemsetD32Async", "cuMemsetD32Async_ptsz"]
launches = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"]
# the program's own: the checksum's read back (tl_hash_device) and the arena's first clearing
want = dict({n: 12 for n in names}, **{n: 48 for n in launches})
want["cuMemcpyDtoH_v2"] += 12
want["cuMemsetD8_v2"] += 1
want["cuMemcpyHtoD_v2"] += 1
bad = [n for n in want if calls.get(n) != want[n]]
if bad:
    sys.exit("calls not counted once a step (four times for launches): %s" % {n: calls.get(n) for n in bad})
print("-- all %d entry points counted once a step (launches four times)" % (len(names) + len(launches)))
PY
note "every SHIM_OP_HOOK_C hook passes the program's arguments on (trace and replay, $SEEDS seeds)"
