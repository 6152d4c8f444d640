# replay_build_offlock.sh - template builds run outside the engine's lock (issue 26): while one
# thread's synchronize builds a template, made slow by the software device
# (SIMCUDA_DELAY=cuGraphInstantiateWithFlags:1500 sleeps 1.5 s in every instantiate), a second
# thread keeps launching into its own stream and its calls complete. With the build under the
# lock, every call of the second thread waits for it (0 calls complete meanwhile). Results are
# the program's own, bit for bit. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_buildside
[[ -x $prog && -f $CUFOLD ]] || fail "$prog or $CUFOLD not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0 CUFOLD_WARMUP=2 CUFOLD_MIN_OPS=2

SEEDS=5 same_output_over_seeds "$prog" 6
run_plain "$TMP/plain" "$prog" 6 2>/dev/null || fail "rpl_buildside failed without cufold"
SIMCUDA_DELAY=cuGraphInstantiateWithFlags:1500 SIMCUDA_STATS=$TMP/st.json \
	run_cufold "$TMP/run" "$prog" 6 2>"$TMP/err" || { cat "$TMP/err"; fail "rpl_buildside failed with cufold"; }
cmp -s "$TMP/plain" "$TMP/run" || fail "output differs with cufold and a slow instantiate"
grep '^buildside:' "$TMP/err"
python3 - "$TMP/err" "$TMP/st.json" <<'PY' || fail "the second thread waited for the template build"
import json, re, sys
m = re.search(r"longest synchronize (\d+) ms, side calls completed during it (\d+)", open(sys.argv[1]).read())
if not m:
    sys.exit("no buildside line")
ms, calls = int(m.group(1)), int(m.group(2))
graphs = json.load(open(sys.argv[2]))["totals"]["graph_launches"]
if ms < 1400:
    sys.exit("no synchronize took the build's 1.5 s (%d ms): no build was slowed" % ms)
if graphs == 0:
    sys.exit("nothing was replayed")
if calls < 20:
    sys.exit("only %d side calls completed during the %d ms build" % (calls, ms))
print("%d side calls completed during a %d ms template build; %d graph launches" % (calls, ms, graphs))
PY
note "other threads' calls go on while a template builds"
