# replay_threads.sh - four host threads launching into their own streams and one shared stream
# (ordered by the program's lock) while cufold replays: no deadlock, nothing reordered within a
# stream (results bit for bit the program's own over seeds and repeated runs), and templates do
# replay. Run it from a SAN=thread build (make SAN=thread; B=build/thread tests/run replay_threads)
# to check the engine's and replay's locking with ThreadSanitizer. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog && -f $CUFOLD ]] || fail "$prog or $CUFOLD not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

same_output_over_seeds "$prog" threads 10
run_plain "$TMP/plain" "$prog" threads 10 || fail "rpl_loop threads failed without cufold"
for ((i = 0; i < 10; i++)); do
	CUFOLD_SEGMENT=$((3 + i)) SIMCUDA_STATS=$TMP/st.$i run_cufold "$TMP/run" "$prog" threads 10 || fail "run $i failed with cufold"
	cmp -s "$TMP/plain" "$TMP/run" || fail "run $i differs with cufold"
done
python3 - "$TMP"/st.* <<'PY' || fail "no graph launches while the threads ran"
import json, sys
n = sum(json.load(open(p))["totals"]["graph_launches"] for p in sys.argv[1:])
print("graph launches over the runs: %d" % n)
sys.exit(0 if n > 0 else 1)
PY
note "10 more runs with threads identical"
