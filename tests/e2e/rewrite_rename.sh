#!/usr/bin/env bash
# rewrite_rename.sh - writing elsewhere (output renaming, rewrite/rename.c) end to end, on a
# tower's shape (tests/progs/rw_rename.c): per feature a scale writes the one temporary t that
# the next feature's scale writes again, an add reads it between. Only that reused memory orders
# the scales: with the later scales writing buffers of cufold's own (their adds reading them), the
# scales run as one launch and the adds as another; the last scale's output is copied back into t
# (the program reads t at the end); the others are overwritten by the next scale and need no copy.
# Results bit for bit the same as without cufold over 20 seeds, blocks in shuffled order. copy: a
# device copy reads t after each scale: its source is patched like the adds' pointers. chain: a true dependence (each scale reads what the add before it wrote):
# nothing renamed, nothing fused. CUFOLD_RENAME_MAX_BYTES=0: no renaming, the same results.
# tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rw_rename
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=1 CUFOLD_GATE=0
unset CUFOLD_RULES CUFOLD_RENAME_MAX_BYTES

for mode in tower copy chain; do
	same_output_over_seeds "$prog" $mode 8
	count_steps "$mode" cufold "$prog" $mode @STEPS@
	CUFOLD_RENAME_MAX_BYTES=0 count_steps "${mode}_off" cufold "$prog" $mode @STEPS@
done
CUFOLD_RENAME_MAX_BYTES=0 same_output_over_seeds "$prog" tower 8
count_steps plain plain "$prog" tower @STEPS@
want_per_step plain kernels_executed 8
# tower: 8 launches a step become 2, and one copy back
want_per_step tower kernels_executed 2
want_per_step tower kernel:scale_cf_multi 1
want_per_step tower kernel:add_cf_multi 1
want_per_step tower copies_executed 1
# copy: the same launches; the program's 4 copies, reading the buffers, and the one copy back
want_per_step copy kernels_executed 2
want_per_step copy copies_executed 5
# chain, and no budget: nothing fused
want_per_step chain kernels_executed 8
for mode in tower copy chain; do
	want_per_step "${mode}_off" kernels_executed 8
done
python3 - "$TMP/tower.16.report" "$TMP/tower_off.16.report" "$TMP/chain.16.report" <<'PY' || fail "the report does not say what was renamed"
import json, sys
def rep(p):
    r = json.load(open(p))["replay"]
    ren = {}
    for t in r["templates"]:
        for k, v in t["rewrite"]["renamable"].items():
            ren[k] = ren.get(k, 0) + v
    return r, ren
on, ren = rep(sys.argv[1])
off, ren_off = rep(sys.argv[2])
chain, ren_chain = rep(sys.argv[3])
print("tower: %s, buffers %d bytes held (peak %d); budget 0: %s; chain: %s"
      % (ren, on["rename_bytes"], on["rename_bytes_peak"], ren_off, ren_chain))
# 3 scales renamed (8 KiB each), the last copied back; the buffers freed with the template at exit
if ren.get("renamed") != 3 or ren.get("copied_back") != 1 or ren.get("renamed_bytes") != 3 * 8192:
    sys.exit("tower: want 3 launches renamed, 1 copied back, 24576 bytes: %s" % ren)
if on["rename_bytes_peak"] < 3 * 8192:
    sys.exit("tower: the buffers are not counted: %d" % on["rename_bytes_peak"])
if ren_off.get("renamed") or off["rename_bytes_peak"] or ren_chain.get("renamed"):
    sys.exit("budget 0 or a true dependence must rename nothing: %s %s" % (ren_off, ren_chain))
PY
note "rw_rename: scales and adds of 4 features fused through writing elsewhere, identical over $SEEDS seeds"
