# workloads.sh - the workloads (tests/workloads) are deterministic and correctly synchronized:
# the same checksum over many seeds of the software device's random schedule and in submission
# order, and a deliberately missing event wait (recsys --drop-wait) is caught; with cufold
# preloaded they print exactly what they print without it. Also the CPU-side parts of
# scripts/bench (--quick) and scripts/gpu-check (exit 77 without a GPU; --sim flow). tests layer.
source "$(dirname "$0")/lib.sh"
WSTEPS=${WSTEPS:-6}   # past cufold's warm-up, so replayed steps are compared too
WSEEDS=${WSEEDS:-12}

for w in recsys transformer inference; do
	prog=$B/workloads/$w
	[[ -x $prog ]] || fail "$prog is not built"

	# the output line, and the flags every workload takes
	$prog --steps 0 >"$TMP/zero" || fail "$w --steps 0 exited $?"
	grep -q "^$w steps=0 scale=1 params=[0-9]* loss=.* checksum=[0-9a-f]\{16\}$" "$TMP/zero" ||
		{ cat "$TMP/zero"; fail "$w: unexpected output for --steps 0"; }
	$prog --steps 2 --census --time >"$TMP/flags" || fail "$w --census --time exited $?"
	grep -q "^census: slice_glue_copies=[0-9]* memsets=[0-9]* repeated_elementwise=[0-9]*$" "$TMP/flags" ||
		{ cat "$TMP/flags"; fail "$w: no census line"; }
	grep -q "^time: timed_steps=2 step_us_wall=" "$TMP/flags" || { cat "$TMP/flags"; fail "$w: no time line"; }
	if $prog --bogus >/dev/null 2>&1; then
		fail "$w accepted an unknown flag"
	fi

	# identical over seeds of the random schedule and in submission order
	SIMCUDA_SCHEDULE=inorder run_plain "$TMP/$w.inorder" "$prog" --steps "$WSTEPS" || fail "$w exited $? (inorder)"
	grep -q "^$w steps=$WSTEPS " "$TMP/$w.inorder" || fail "$w: no result line"
	for ((s = 1; s <= WSEEDS; s++)); do
		SIMCUDA_SEED=$s run_plain "$TMP/$w.$s" "$prog" --steps "$WSTEPS" || fail "$w exited $? (seed $s)"
		cmp -s "$TMP/$w.inorder" "$TMP/$w.$s" ||
			{ diff "$TMP/$w.inorder" "$TMP/$w.$s"; fail "$w: seed $s differs from the in-order schedule"; }
	done
	note "$w: identical in order and over $WSEEDS seeds: $(cat "$TMP/$w.inorder")"

	# the checksum covers the losses and the parameters: one more step changes it
	run_plain "$TMP/$w.more" "$prog" --steps $((WSTEPS + 1)) || fail "$w exited $?"
	[[ $(sed 's/.*checksum=//' "$TMP/$w.more") != $(sed 's/.*checksum=//' "$TMP/$w.inorder") ]] ||
		fail "$w: the checksum does not depend on the steps run"
done

# The seeds have teeth: without the joins of its lookup stream recsys races, and the schedules
# disagree (in submission order the lookups happen to run first; random orders do not).
prog=$B/workloads/recsys
SIMCUDA_SCHEDULE=inorder run_plain "$TMP/race.inorder" "$prog" --steps 2 --drop-wait || fail "recsys --drop-wait exited $?"
differs=0
for ((s = 1; s <= WSEEDS; s++)); do
	SIMCUDA_SEED=$s run_plain "$TMP/race.$s" "$prog" --steps 2 --drop-wait || fail "recsys --drop-wait exited $?"
	cmp -s "$TMP/race.inorder" "$TMP/race.$s" || differs=$((differs + 1))
done
((differs > 0)) || fail "a missing event wait went unnoticed over $WSEEDS seeds"
note "recsys --drop-wait: $differs of $WSEEDS seeds differ from the in-order schedule (race caught)"

# With cufold preloaded: the same output, seed for seed, at each rewrite level.
if [[ -f $CUFOLD ]]; then
	SEEDS=${CUFOLD_SEEDS:-6}
	for w in recsys transformer inference; do
		for opt in 0 1 2; do
			note "CUFOLD_OPT=$opt"
			CUFOLD_OPT=$opt same_output_over_seeds "$B/workloads/$w" --steps "$WSTEPS"
		done
	done
else
	note "no $CUFOLD: the comparison with cufold preloaded is skipped"
fi

# scripts/bench: every configuration agrees with eager, the JSON and the chart are written
B=$B BENCH_OUT="$TMP/bench" python3 scripts/bench --quick >"$TMP/bench.out" 2>&1
rc=$?
((rc == 0)) || { tail -30 "$TMP/bench.out"; fail "scripts/bench --quick exited $rc"; }
grep -q "^== recsys" "$TMP/bench.out" || fail "bench printed no recsys table"
python3 - "$TMP/bench/bench.json" <<'PY' || fail "bench.json is not what the table says"
import json, sys
d = json.load(open(sys.argv[1]))
# cupy-towers is there when make deps-clients made the clients' venv
assert set(d["workloads"]) - {"cupy-towers"} == {"recsys", "transformer", "inference", "dataparallel", "dataparallel-wd", "patterns"}, d["workloads"].keys()
for w, r in d["workloads"].items():
    e = r["configs"]["eager"]
    assert e["host_submissions"] > 100 and e["modeled_us"] > 0, (w, e)
    for c, m in r["configs"].items():
        assert m["checksum"] == "same", (w, c, m["checksum"])
    assert r["targets"], w
PY
[[ -s $TMP/bench/bench.png ]] || note "no chart drawn (matplotlib missing?)"

# scripts/bench --grid on a corner of the regime grid: every cell's checksums agree with eager,
# the charge and the criteria are there
if [[ -f $CUFOLD ]]; then
	B=$B BENCH_OUT="$TMP/grid" BENCH_GRID_WORKLOADS=inference BENCH_GRID_APP_US="0 5" BENCH_GRID_KERNEL_US="0 20" \
		python3 scripts/bench --grid >"$TMP/grid.out" 2>&1
	rc=$?
	((rc == 0)) || { tail -30 "$TMP/grid.out"; fail "scripts/bench --grid exited $rc"; }
	grep -q "^== grid: inference" "$TMP/grid.out" || fail "bench --grid printed no inference table"
	python3 - "$TMP/grid/grid.json" <<'PY' || fail "grid.json is not what the grid table says"
import json, sys
d = json.load(open(sys.argv[1]))
cells = d["workloads"]["inference"]["cells"]
assert [(c["app_us"], c["kernel_us"]) for c in cells] == [(0, 0), (0, 20), (5, 0), (5, 20)], cells
for c in cells:
    assert c["checksums_same"], c
    e = c["configs"]["eager"]["modeled_us"]
    for lv in d["levels"]:
        m = c["configs"][lv]
        assert m["matched_ops"] > 0 and m["charge_us"] >= 0, m
        assert abs(m["speedup"] - e / (m["modeled_us"] + m["charge_us"])) < 1e-9, m
# more program host time makes eager's step longer; more kernel time too
t = {(c["app_us"], c["kernel_us"]): c["configs"]["eager"]["modeled_us"] for c in cells}
assert t[(5, 0)] > t[(0, 0)] and t[(0, 20)] > t[(0, 0)], t
assert {r["verdict"] for r in d["criteria"]} <= {"MET", "NOT MET"} and len(d["criteria"]) == 3 * len(d["levels"])
PY
	[[ -s $TMP/grid/grid.png ]] || note "no heat map drawn (matplotlib missing?)"
fi

# scripts/gpu-check: well-formed; exits 77 without a GPU; its flow runs on the software device
bash -n scripts/gpu-check || fail "scripts/gpu-check has a syntax error"
if ! command -v nvidia-smi >/dev/null 2>&1; then
	scripts/gpu-check >"$TMP/gc.none" 2>&1
	rc=$?
	[[ $rc == 77 ]] || { cat "$TMP/gc.none"; fail "gpu-check without a GPU exited $rc, not 77"; }
fi
if [[ -n ${SAN:-} ]]; then
	# gpu-check builds the workloads itself, without sanitizer flags, against this build's device
	note "SAN=$SAN: gpu-check --sim skipped (it builds uninstrumented programs)"
else
	B=$B GPU_CHECK_DIR="$TMP/gc" GPU_CHECK_STEPS=4 OUT="$TMP/gcout" scripts/gpu-check --sim >"$TMP/gc.out" 2>&1
	rc=$?
	((rc == 0)) || { cat "$TMP/gc.out"; fail "gpu-check --sim exited $rc"; }
	for w in recsys transformer inference; do
		grep -Eq "^$w +1 eager .* reference$" "$TMP/gc.out" ||
			{ cat "$TMP/gc.out"; fail "gpu-check --sim: no eager row for $w"; }
		if [[ -f $CUFOLD ]]; then
			[[ $(grep -Ec "^$w +1 opt[012] .* same$" "$TMP/gc.out") == 3 ]] ||
				{ cat "$TMP/gc.out"; fail "gpu-check --sim: $w under cufold not the same as eager"; }
		fi
	done
	[[ -s $TMP/gcout/gpu-check.txt && -s $TMP/gcout/gpu-check.json ]] || fail "gpu-check wrote nothing under \$OUT"
	# cufold's own device memory: each run's device memory in use (cuMemGetInfo) reaches the JSON
	python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows']; sys.exit(0 if r and all(x['device_used_kib'] for x in r) else 1)" \
		"$TMP/gcout/gpu-check.json" || fail "gpu-check --sim: a row without device_used_kib"
fi
echo "workloads: ok"
