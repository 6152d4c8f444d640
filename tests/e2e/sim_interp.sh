# sim_interp.sh - the software device's PTX interpreter end to end: a training loop whose kernels
# have no twins (notwin_train: runs only interpreted, self-checks every step against a host
# reference) gives the same output with cufold replaying it as graphs, over seeds; programs whose
# kernels do have twins give the same output forced through the interpreter (SIMCUDA_INTERPRET=1)
# as with their twins, and with cufold as without; cufold's own kernels pass their unit test
# interpreted. tests layer.
source "$(dirname "$0")/lib.sh"
SEEDS=3
export CUFOLD_MODE=replay

prog=$B/progs/notwin_train
[[ -x $prog ]] || fail "$prog is not built"
# four graphable ops per step (3 kernels, 3 memsets): below cufold's default minimum of 8
CUFOLD_MIN_OPS=4 same_output_over_seeds "$prog" 12
CUFOLD_MIN_OPS=4 SIMCUDA_STATS=$TMP/nt.json run_cufold /dev/null "$prog" 12 || fail "notwin_train under cufold exited $?"
python3 - "$TMP/nt.json" <<'PY' || fail "cufold did not replay notwin_train's steps as graphs"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["graph_launches"] > 0 and t["graph_nodes_executed"] > t["graph_launches"], t
PY

for cmd in "$B/progs/sample_train 8 16" "$B/progs/rpl_loop train 10"; do
	# shellcheck disable=SC2086
	run_plain "$TMP/twin" $cmd || fail "$cmd exited $?"
	# shellcheck disable=SC2086
	SIMCUDA_INTERPRET=1 run_plain "$TMP/interp" $cmd || fail "$cmd exited $? interpreted"
	cmp -s "$TMP/twin" "$TMP/interp" || fail "$cmd: output differs interpreted"
	# shellcheck disable=SC2086
	SIMCUDA_INTERPRET=1 same_output_over_seeds $cmd
done
note "sample_train and rpl_loop: the same interpreted as with twins"

SIMCUDA_INTERPRET=1 "$B/unit/sim_cufold_kernels" >"$TMP/ck" 2>&1 || { tail "$TMP/ck"; fail "cufold's kernels, interpreted"; }
note "cufold's own kernels pass interpreted"
