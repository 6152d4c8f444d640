# sim_cost.sh - the software device's cost model on whole programs: modeled times are the same
# under every seed and schedule (the work runs in random order, the timing pass does not), with
# program host time and extra kernel time that make streams contend; the program's own host time
# (--app-us, APP_US) is charged on the program's side, so it is the same with cufold deferring
# the calls as without. tests layer.
source "$(dirname "$0")/lib.sh"
CSEEDS=${CSEEDS:-3}

# modeled PATH: the stats file's modeled times, one line
modeled() {
	python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["modeled"]; print(m["total_ns"], m["device_end_ns"], m["app_host_ns"], m["busy_ns"])' "$1"
}

# 1. seeds: eager and replayed, with contention (20 us per kernel) and program host time
for w in recsys transformer inference; do
	prog=$B/workloads/$w
	for cfg in eager 1; do
		pre=()
		# CUFOLD_GATE=0: the gate's decisions also weigh cufold's CPU time, which differs run to run
		[[ $cfg != eager ]] && { [[ -f $CUFOLD ]] || continue; pre=(LD_PRELOAD="$CUFOLD" CUFOLD_OPT=$cfg CUFOLD_GATE=0); }
		env "${pre[@]}" SIMCUDA_SCHEDULE=inorder SIMCUDA_KERNEL_NS=20000 SIMCUDA_STATS="$TMP/in.json" \
			"$prog" --steps 4 --app-us 2 >/dev/null || fail "$w ($cfg, inorder) exited $?"
		want=$(modeled "$TMP/in.json")
		for ((s = 1; s <= CSEEDS; s++)); do
			env "${pre[@]}" SIMCUDA_SEED=$s SIMCUDA_KERNEL_NS=20000 SIMCUDA_STATS="$TMP/s.json" \
				"$prog" --steps 4 --app-us 2 >/dev/null || fail "$w ($cfg, seed $s) exited $?"
			got=$(modeled "$TMP/s.json")
			[[ $got == "$want" ]] || fail "$w ($cfg): modeled times under seed $s ($got) differ from in order ($want)"
		done
		note "$w ($cfg): modeled times identical in order and over $CSEEDS seeds: $want"
	done
done

# 2. the program's host time: N us per enqueued op, the same with cufold as without
prog=$B/workloads/inference
SIMCUDA_STATS="$TMP/a0.json" "$prog" --steps 4 >/dev/null || fail "inference exited $?"
SIMCUDA_STATS="$TMP/a10.json" "$prog" --steps 4 --app-us 10 >/dev/null || fail "inference --app-us exited $?"
APP_US=10 SIMCUDA_STATS="$TMP/env10.json" "$prog" --steps 4 >/dev/null || fail "inference APP_US exited $?"
python3 - "$TMP/a0.json" "$TMP/a10.json" "$TMP/env10.json" <<'PY' || fail "program host time not charged as expected"
import json, sys
a0, a10, e10 = (json.load(open(p)) for p in sys.argv[1:])
assert a0["modeled"]["app_host_ns"] == 0, a0["modeled"]
app = a10["modeled"]["app_host_ns"]
# one charge per enqueue: every submission but the final hashes (testlib's own copies), plus the
# stream waits (not submissions on the device)
subs = a10["totals"]["host_submissions"]
assert app % 10000 == 0 and 0.8 * subs * 10000 <= app <= 1.2 * subs * 10000, (app, subs)
assert e10["modeled"]["app_host_ns"] == app, "APP_US and --app-us differ"
# eager inference is host-bound: the step grows by about the program's time
d = a10["modeled"]["total_ns"] - a0["modeled"]["total_ns"]
assert 0.95 * app <= d <= app, (d, app)
print("app host time %d ns over %d submissions; modeled time +%d ns" % (app, subs, d))
PY
if [[ -f $CUFOLD ]]; then
	for opt in 0 1 2; do
		LD_PRELOAD="$CUFOLD" CUFOLD_OPT=$opt SIMCUDA_STATS="$TMP/c$opt.json" "$prog" --steps 4 --app-us 10 >/dev/null ||
			fail "inference under cufold (CUFOLD_OPT=$opt) exited $?"
		python3 - "$TMP/a10.json" "$TMP/c$opt.json" <<'PY' || fail "CUFOLD_OPT=$opt: deferred calls not charged like eager ones"
import json, sys
e, c = (json.load(open(p)) for p in sys.argv[1:])
assert c["modeled"]["app_host_ns"] == e["modeled"]["app_host_ns"], (c["modeled"], e["modeled"])
assert c["totals"]["host_submissions"] < e["totals"]["host_submissions"], "cufold did not defer anything"
# the program's own time is a floor under cufold's step as under eager's
assert c["modeled"]["total_ns"] >= c["modeled"]["app_host_ns"]
PY
	done
	note "program host time: the same charge eager and under cufold at every level"
fi

# 3. the test programs take APP_US
APP_US=3 SIMCUDA_STATS="$TMP/p.json" "$B/progs/rpl_loop" train 2 >/dev/null || fail "rpl_loop exited $?"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["modeled"]["app_host_ns"] > 0' "$TMP/p.json" ||
	fail "rpl_loop: APP_US not charged"
note "cost model ok"
