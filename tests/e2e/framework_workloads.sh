# framework_workloads.sh - workloads shaped like what training frameworks do around a step
# (tests/workloads/dataparallel.c, launcher.c): a compute and a communication stream joined by
# events, an allocator querying events and freeing blocks, a watchdog thread polling events, and
# a 4-rank multi-process job with a barrier kernel per step. Their output is the same on every
# schedule seed, with and without the watchdog, and with and without cufold; every rank writes
# its own report (%p) and replays; the watchdog does not multiply cufold's host submissions per
# step (its queries must not fragment windows). tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
DSTEPS=${DSTEPS:-5}   # past cufold's warm-up, so replayed steps are compared too
dp=$B/workloads/dataparallel
launcher=$B/workloads/launcher
[[ -x $dp && -x $launcher ]] || fail "$dp or $launcher is not built"

# the output line and the flags
$dp --steps 0 >"$TMP/zero" || fail "dataparallel --steps 0 exited $?"
grep -q "^dataparallel steps=0 scale=1 params=12 loss=.* checksum=[0-9a-f]\{16\}$" "$TMP/zero" ||
	{ cat "$TMP/zero"; fail "dataparallel: unexpected output for --steps 0"; }
$dp --steps 2 --census --time --watchdog-us 50 >"$TMP/flags" || fail "dataparallel with every flag exited $?"
grep -q "^census: slice_glue_copies=[0-9]* memsets=[0-9]* repeated_elementwise=[0-9]*$" "$TMP/flags" ||
	{ cat "$TMP/flags"; fail "dataparallel: no census line"; }
grep -q "^time: timed_steps=2 " "$TMP/flags" || { cat "$TMP/flags"; fail "dataparallel: no time line"; }
for bad in "--bogus" "--watchdog-us x" "--rank 4 --world 4"; do
	# shellcheck disable=SC2086
	if $dp $bad >/dev/null 2>&1; then fail "dataparallel accepted $bad"; fi
done

# Deterministic: one output over the seeds of the random schedule, in submission order, and with
# the watchdog; with cufold, the same output seed for seed.
SIMCUDA_SCHEDULE=inorder run_plain "$TMP/dp.ref" "$dp" --steps "$DSTEPS" || fail "dataparallel exited $? (inorder)"
grep -q "^dataparallel steps=$DSTEPS " "$TMP/dp.ref" || fail "dataparallel: no result line"
for wd in 0 20; do
	same_output_over_seeds "$dp" --steps "$DSTEPS" --watchdog-us $wd
	for ((s = 1; s <= SEEDS; s++)); do
		cmp -s "$TMP/dp.ref" "$TMP/plain.$s" ||
			{ diff "$TMP/dp.ref" "$TMP/plain.$s"; fail "dataparallel --watchdog-us $wd: seed $s differs from the in-order schedule without the watchdog"; }
	done
done
run_plain "$TMP/dp.more" "$dp" --steps $((DSTEPS + 1)) || fail "dataparallel exited $?"
[[ $(sed 's/.*checksum=//' "$TMP/dp.more") != $(sed 's/.*checksum=//' "$TMP/dp.ref") ]] ||
	fail "dataparallel: the checksum does not depend on the steps run"
note "dataparallel: $(cat "$TMP/dp.ref")"

# The multi-process job: 4 ranks, the same combined line on every seed, with and without cufold.
run_plain "$TMP/job.ref" "$launcher" --steps 4 || fail "launcher exited $?"
grep -q "^launcher ranks=4 failed=0 checksum=[0-9a-f]\{16\}$" "$TMP/job.ref" || { cat "$TMP/job.ref"; fail "launcher: no combined line"; }
[[ $(grep -c "^rank [0-3]: dataparallel steps=4 " "$TMP/job.ref") == 4 ]] || { cat "$TMP/job.ref"; fail "launcher: not 4 rank lines"; }
[[ $(grep "^rank" "$TMP/job.ref" | sed 's/.*checksum=//' | sort -u | wc -l) == 4 ]] ||
	{ cat "$TMP/job.ref"; fail "launcher: the ranks did not train on their own data"; }
same_output_over_seeds "$launcher" --steps 4
for ((s = 1; s <= SEEDS; s++)); do
	cmp -s "$TMP/job.ref" "$TMP/plain.$s" || { diff "$TMP/job.ref" "$TMP/plain.$s"; fail "launcher: seed $s differs"; }
done
# a failing rank fails the job
if SIMCUDA_FAIL=cuLaunchKernel:20 run_plain "$TMP/job.fail" "$launcher" --steps 2 2>/dev/null; then
	fail "launcher exited 0 although its ranks failed"
fi
grep -q "^launcher ranks=4 failed=4 " "$TMP/job.fail" || { cat "$TMP/job.fail"; fail "launcher: failed ranks not counted"; }

# Each rank writes its own report (%p), and each replayed: graph launches > 0.
if [[ -f $CUFOLD ]]; then
	mkdir -p "$TMP/rep"
	CUFOLD_REPORT="$TMP/rep/report.%p.json" run_cufold "$TMP/job.cufold" "$launcher" --pids --steps 4 2>"$TMP/job.err" ||
		{ cat "$TMP/job.err"; fail "launcher exited $? with cufold"; }
	cmp -s "$TMP/job.ref" "$TMP/job.cufold" || fail "launcher: output differs with cufold"
	pids=$(sed -n 's/^launcher: rank [0-9]* pid \([0-9]*\)$/\1/p' "$TMP/job.err")
	[[ $(echo "$pids" | wc -w) == 4 ]] || { cat "$TMP/job.err"; fail "launcher did not name 4 rank pids"; }
	for p in $pids; do
		python3 - "$TMP/rep/report.$p.json" <<'PY' || fail "rank pid $p: no report of its own, or it shows no replay"
import json, sys
r = json.load(open(sys.argv[1]))
gl = r["replay"]["graph_launches"]
assert gl > 0, gl
assert r["boundaries"]["BARRIER"]["windows_closed"] >= 4, r["boundaries"]["BARRIER"]
print("%s: %d graph launches, %d barrier kernels" % (sys.argv[1].rsplit("/", 1)[1], gl,
      r["boundaries"]["BARRIER"]["calls"]))
PY
	done
	note "each of the 4 ranks wrote its own report and replayed"
else
	note "no $CUFOLD: the reports and the submission counts are skipped"
	echo "framework_workloads: ok"
	exit 0
fi

# Host submissions per step under cufold, without the watchdog and with it polling every 20 us.
# Per step = (a run of N2 steps - a run of N1 steps) / (N2 - N1), as scripts/bench computes it,
# each run's total the median of 3 (the watchdog's timing varies from run to run).
N1=6 N2=16
submissions() { # out, extra args...: prints the per-step host submissions
	local out=$1 n r; shift
	for n in $N1 $N2; do
		for r in 1 2 3; do
			env SIMCUDA_STATS="$TMP/st.$out.$n.$r.json" LD_PRELOAD="${PRELOAD-$CUFOLD}" \
				"$dp" --steps $n "$@" >/dev/null || fail "dataparallel $* exited $?"
		done
	done
	python3 - "$TMP/st.$out" $N1 $N2 <<'PY'
import json, statistics, sys
base, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
med = lambda n: statistics.median(json.load(open("%s.%d.%d.json" % (base, n, r)))["totals"]["host_submissions"]
                                  for r in (1, 2, 3))
print("%.1f" % ((med(n2) - med(n1)) / (n2 - n1)))
PY
}
eager=$(PRELOAD="" submissions eager)
plain=$(submissions nowd)
watch=$(submissions wd --watchdog-us 20)
note "host submissions per step: eager $eager; cufold $plain without the watchdog, $watch with --watchdog-us 20"
python3 -c "import sys; sys.exit(0 if float('$watch') <= 1.5 * float('$plain') else 1)" ||
	fail "the watchdog multiplies cufold's host submissions per step: $watch with it, $plain without (limit 1.5x)"
echo "framework_workloads: ok"
