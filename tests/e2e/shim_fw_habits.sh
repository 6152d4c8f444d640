#!/usr/bin/env bash
# shim_fw_habits.sh - issue 21 part 3: what frameworks do around every launch and in their first
# steps costs no replay (tests/progs/fw_habits lazy): a module loaded in the middle of a step
# (lazy compilation), the unload of a module nothing in the open window runs, and the queries
# CuPy and numba make before every launch (cuCtxGetDevice, cuPointerGetAttribute(s),
# cuStreamIsCapturing, cuDeviceGetAttribute, cuFuncGetAttribute) end no window, submit nothing
# early, and leave as many ops replayed as the same program without them (fw_habits plain).
# Output identical with and without cufold. shim layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/fw_habits"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
same_output_over_seeds "$prog" lazy 10

for m in lazy plain; do
	CUFOLD_REPORT="$TMP/$m.json" run_cufold "$TMP/$m.out" "$prog" $m 16 || fail "fw_habits $m exited $? with cufold"
done
[[ $(sed 's/.*checksum=//' "$TMP/lazy.out") == $(sed 's/.*checksum=//' "$TMP/plain.out") ]] ||
	fail "lazy and plain compute different results"
python3 - "$TMP/lazy.json" "$TMP/plain.json" <<'PY' || fail "framework habits cost replay"
import json, sys
lazy, plain = (json.load(open(p)) for p in sys.argv[1:])
b = lazy["boundaries"]
bad = []
for kind in ("UNMODELED", "MODULE_UNLOAD"):
    if b[kind]["windows_closed"]:
        bad.append("%d windows closed by %s" % (b[kind]["windows_closed"], kind))
if b["MODULE_UNLOAD"]["calls"] < 1:
    bad.append("the unload was not seen")
if lazy["replay"]["ops_flushed_eagerly"]:
    bad.append("%d ops submitted early (flushed)" % lazy["replay"]["ops_flushed_eagerly"])
lr, pr = lazy["replay"]["ops_replayed"], plain["replay"]["ops_replayed"]
if lr < pr:
    bad.append("%d ops replayed, %d without the loads and queries" % (lr, pr))
print("-- lazy: %d of %d ops replayed (plain: %d of %d); windows closed: %s"
      % (lr, lazy["totals"]["ops"], pr, plain["totals"]["ops"],
         {k: v["windows_closed"] for k, v in b.items() if v["windows_closed"]}))
sys.exit("; ".join(bad) if bad else 0)
PY
note "module loads, an unrelated unload and per-launch queries end no window"
