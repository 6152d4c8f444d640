#!/usr/bin/env bash
# replay_fw_habits.sh - reproducers of issue 21 parts 1 and 2, what real frameworks do every step
# (tests/progs/fw_habits):
#   events  every step creates, records, queries and destroys an event (CuPy's float(x)/.item())
#   pool    every step's arrays sit at other pool addresses with no short cycle (most pointer
#           parameters move), and a scalar parameter is the step number
# Asserted: what holds today, output identical with and without cufold. Printed: the share of
# ops replayed, beside fw_habits plain (the same step with neither habit).
# Targets for the fix (issue 21): events replays as much as plain (no template retired for a
# per-step event, its destroy ends no window that does not wait on it); pool replays >= 80 % of
# its ops with patching (or per-binding-set graphs) cheaper than eager submission. replay layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/fw_habits"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
for m in events pool; do
	same_output_over_seeds "$prog" $m 12
done

for m in plain events pool; do
	CUFOLD_REPORT="$TMP/$m.json" run_cufold "$TMP/$m.out" "$prog" $m 24 || fail "fw_habits $m exited $? with cufold"
	run_plain "$TMP/$m.eager" "$prog" $m 24 || fail "fw_habits $m exited $?"
	cmp -s "$TMP/$m.out" "$TMP/$m.eager" || fail "fw_habits $m 24: output differs with cufold"
done
python3 - "$TMP" <<'PY' || fail "cannot read the reports"
import json, sys
for m in ("plain", "events", "pool"):
    r = json.load(open("%s/%s.json" % (sys.argv[1], m)))
    ops, rep = r["totals"]["ops"], r["replay"]["ops_replayed"]
    why = sorted({t["retired"] for t in r["replay"]["templates"] if t.get("retired")})
    print("-- fw_habits %-6s 24 steps: %5.1f %% of ops replayed (%d of %d)%s"
          % (m, 100.0 * rep / ops, rep, ops, "; templates retired: " + "; ".join(why) if why else ""))
PY
note "per-step events and a moving pool: identical with cufold (replay share printed, not asserted)"
