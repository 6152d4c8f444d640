# replay_exit_fork.sh - replay submits what it keeps before the process forks (the child leaves
# at once; the parent's results are unchanged over 20 seeds) and before it exits: a program that
# leaves without synchronizing still has every kernel, copy and memset it asked for executed
# (the software device's counters), as without cufold. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

same_output_over_seeds "$prog" fork 12
same_output_over_seeds "$prog" exit 12
SIMCUDA_STATS=$TMP/plain.json run_plain /dev/null "$prog" exit 12 || fail "exit mode failed"
SIMCUDA_STATS=$TMP/cufold.json run_cufold /dev/null "$prog" exit 12 || fail "exit mode failed with cufold"
python3 - "$TMP/plain.json" "$TMP/cufold.json" <<'PY' || fail "work kept at exit was lost"
import json, sys
p, c = (json.load(open(f))["totals"] for f in sys.argv[1:])
for k in ("kernels_executed", "memsets_executed", "copies_executed", "bytes_set", "bytes_copied"):
    if p[k] != c[k]:
        sys.exit("%s: %s without cufold, %s with" % (k, p[k], c[k]))
if c["graph_launches"] == 0:
    sys.exit("nothing was replayed")
print("executed the same: %d kernels, %d graph launches with cufold" % (c["kernels_executed"], c["graph_launches"]))
PY
note "kept work is submitted before fork and exit"
