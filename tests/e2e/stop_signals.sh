#!/usr/bin/env bash
# stop_signals.sh - a job stopped by SIGTERM, SIGINT or SIGHUP keeps its report (and trace),
# written by cufold's thread, not in the handler, and still ends by that signal (status 128+N);
# a program's own SIGTERM handler wins and its normal exit writes the report; an ignored SIGHUP
# stays ignored; a forked child stopped by SIGTERM writes its own report (%p) without touching
# the parent's; CUFOLD_REPORT_EVERY rewrites the report while the job runs, so even SIGKILL
# leaves one; the report carries the version and CUFOLD_RUN_ID. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/sig_loop"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
version=$(cat "$ROOT/VERSION")
# job control: background jobs keep SIGINT (a shell without it starts them with SIGINT ignored)
set -m

# start LABEL MODE [env...]: the program in the background under cufold, once it is running
start() {
	local label=$1 how=$2
	shift 2
	: >"$TMP/$label.out"
	env "$@" LD_PRELOAD="$CUFOLD" "$prog" "$how" >"$TMP/$label.out" 2>"$TMP/$label.err" &
	pid=$!
	for _ in $(seq 300); do
		grep -q running "$TMP/$label.out" && return 0
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	cat "$TMP/$label.err"
	fail "$label: the program did not start its loop"
}
# report_ok FILE RUN_ID: a complete report of this version and run with windows in it
report_ok() {
	python3 - "$1" "$2" "$version" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["version"] == sys.argv[3], "version %r" % r.get("version")
assert r["run_id"] == sys.argv[2], "run_id %r" % r.get("run_id")
assert r["totals"]["windows"] >= 10, "only %d windows" % r["totals"]["windows"]
print(r["totals"]["windows"])
PY
}

for sig in TERM INT HUP; do
	num=$(kill -l $sig)
	start $sig plain CUFOLD_REPORT="$TMP/$sig.json" CUFOLD_TRACE="$TMP/$sig.trace.json" CUFOLD_RUN_ID="run-$sig.1"
	sleep 0.3
	kill -$sig $pid
	wait $pid
	rc=$?
	[[ $rc == $((128 + num)) ]] || { cat "$TMP/$sig.err"; fail "SIG$sig: exit status $rc, not $((128 + num))"; }
	[[ -f "$TMP/$sig.json" ]] || { cat "$TMP/$sig.err"; fail "SIG$sig: no report"; }
	w=$(report_ok "$TMP/$sig.json" "run-$sig.1") || fail "SIG$sig: the report is not complete"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/$sig.trace.json" || fail "SIG$sig: no trace"
	note "SIG$sig: status $rc, report with $w windows"
done

# the program's own handler: it ends its loop and exits 0; its exit writes the report
start own handler CUFOLD_REPORT="$TMP/own.json" CUFOLD_LOG=info
sleep 0.3
kill -TERM $pid
wait $pid || { cat "$TMP/own.err"; fail "a program with its own SIGTERM handler exited $?"; }
grep -q "^sig_loop steps=" "$TMP/own.out" || fail "the program's handler did not end its loop"
! grep -q "stopped by signal" "$TMP/own.err" || fail "cufold's handler replaced the program's"
report_ok "$TMP/own.json" "" >/dev/null || fail "no report after the program's own handler"

# an ignored SIGHUP stays ignored
(
	trap '' HUP
	start ign plain CUFOLD_REPORT="$TMP/ign.json"
	kill -HUP $pid
	sleep 0.5
	kill -0 $pid 2>/dev/null || fail "an ignored SIGHUP stopped the program"
	kill -TERM $pid
	wait $pid
	[[ $? == 143 ]] || fail "SIGTERM after an ignored SIGHUP: status not 143"
) || exit 1
report_ok "$TMP/ign.json" "" >/dev/null || fail "no report after an ignored SIGHUP and a SIGTERM"

# a forked child stopped by SIGTERM: its own report; the parent then dies by the same signal
# (ThreadSanitizer refuses threads started after a multi-threaded fork unless told otherwise)
start fork forked CUFOLD_REPORT="$TMP/fork.%p.json" TSAN_OPTIONS="${TSAN_OPTIONS:-}:die_after_fork=0"
child=$(pgrep -P $pid | head -1)
[[ -n $child ]] || fail "no child process"
sleep 0.3
kill -TERM $child
wait $pid
rc=$?
[[ $rc == 143 ]] || { cat "$TMP/fork.err"; fail "forked: status $rc"; }
report_ok "$TMP/fork.$child.json" "" >/dev/null || { cat "$TMP/fork.err"; fail "forked: no child report"; }
report_ok "$TMP/fork.$pid.json" "" >/dev/null || { cat "$TMP/fork.err"; fail "forked: no parent report"; }

# CUFOLD_REPORT_EVERY: the report exists while the job runs, and survives SIGKILL
start every plain CUFOLD_REPORT="$TMP/every.json" CUFOLD_REPORT_EVERY=1 CUFOLD_RUN_ID=ev
sleep 2.5
kill -0 $pid 2>/dev/null || fail "every: the program ended early"
w1=$(report_ok "$TMP/every.json" ev) || fail "every: no report while running"
sleep 1.5
kill -KILL $pid
wait $pid
w2=$(report_ok "$TMP/every.json" ev) || fail "every: no report after SIGKILL"
(( w2 > w1 )) || fail "every: the report was not rewritten ($w1 then $w2 windows)"
note "CUFOLD_REPORT_EVERY=1: $w1 then $w2 windows, report kept through SIGKILL"
exit 0
