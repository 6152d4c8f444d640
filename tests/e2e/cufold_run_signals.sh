#!/usr/bin/env bash
# cufold_run_signals.sh - `cufold run` as a scheduler and a shell see it: SIGTERM, SIGINT and
# SIGHUP sent to the wrapper reach the job's whole process group (a launcher's two ranks stop
# too) and the exit status is the job's (128+n); at a terminal the job gets the terminal (it reads
# it; ^C stops it); a job killed before writing a report is said to
# be so; the exit summary counts only this run's reports (not a previous run's file, not
# another job's); a file that is not executable exits 126 "permission denied" (127 only for
# not found); --lib naming something that is not a shared library is refused before the job
# runs (exit 2); --version. tests layer.
source "$(dirname "$0")/lib.sh"

CMD="$ROOT/scripts/cufold"
export CUFOLD_LIB="$CUFOLD"

# wait_for FILE: up to 10 s for FILE to exist
wait_for() { local i; for ((i = 0; i < 200; i++)); do [[ -e $1 ]] && return 0; sleep 0.05; done; return 1; }
# alive PID: the process exists and is not a zombie
alive() { [[ -e /proc/$1 ]] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# A launcher: a program that starts two ranks (each a sleep, their pids recorded) and waits (not
# a shell: sh's own background children ignore SIGINT, whoever sends it). The
# wrapper gets the signal, as from a scheduler; the ranks must stop with it. (A script's
# background job starts with INT and QUIT ignored, and a signal ignored at the start stays so, as
# it would for the job run directly: env --default-signal undoes that, as a scheduler's start does.)
for sig in TERM INT HUP; do
	d=$TMP/sig.$sig; mkdir -p "$d"
	env --default-signal=INT,QUIT "$CMD" run -q -- \
		python3 -c 'import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
ranks = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
for i, r in enumerate(ranks):
    open("%s/r%d" % (sys.argv[1], i + 1), "w").write("%d" % r.pid)
for r in ranks:
    r.wait()' "$d" &
	wrapper=$!
	wait_for "$d/r1" && wait_for "$d/r2" || fail "the launcher's ranks did not start"
	sleep 0.2 # the wrapper may still be in the shell (before exec) when the ranks write their pids
	kill -s "$sig" $wrapper
	for ((i = 0; i < 100; i++)); do alive $wrapper || break; sleep 0.1; done
	if alive $wrapper; then
		kill -9 $wrapper "$(cat "$d/r1")" "$(cat "$d/r2")"
		fail "SIG$sig to cufold run: the wrapper still runs after 10 s"
	fi
	wait $wrapper; rc=$?
	n=$(kill -l "$sig"); n=$((n + 128))
	[[ $rc == "$n" ]] || fail "SIG$sig to cufold run: exit $rc, not $n"
	sleep 0.2
	for r in "$d/r1" "$d/r2"; do
		pid=$(cat "$r")
		if alive "$pid"; then kill -9 "$pid"; fail "SIG$sig to cufold run: rank $pid still runs (not forwarded to the group)"; fi
	done
	note "SIG$sig to the wrapper stops the job and both ranks; exit $rc"
done

# at a terminal: the job (in its own process group) is given the terminal, so it reads what is
# typed, and ^C typed there stops it (exit 130); the wrapper takes the terminal back
python3 - "$CMD" <<'PY' || fail "cufold run at a terminal"
import os, pty, sys, time, select
cmd = sys.argv[1:]  # the command
def run(job, send, expect_rc, expect_out):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd + ["run", "-q", "--"] + job)
    out = b""
    t0 = time.time()
    sent = False
    while time.time() - t0 < 20:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and b"ready" in out:
            time.sleep(0.2)
            os.write(fd, send)
            sent = True
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid:
            break
    else:
        os.kill(pid, 9)
        sys.exit("hung; output %r" % out)
    if not wpid:
        _, st = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(st)
    if rc != expect_rc or expect_out not in out:
        sys.exit("job %r: exit %d (want %d), output %r" % (job, rc, expect_rc, out))
    pass
# the job owns the terminal: it reads a line typed there
run(["sh", "-c", "echo ready; read x; echo got-$x"], b"hello\n", 0, b"got-hello")
# ^C typed on the terminal stops the job (and its children), exit 130
run(["python3", "-c", "import signal,subprocess; signal.signal(signal.SIGINT, signal.SIG_DFL); print('ready', flush=True); subprocess.run(['sleep', '30'])"], b"\x03", 130, b"ready")
PY
note "at a terminal: the job reads the terminal, ^C stops it"

# the job itself killed by a signal: 128+n, and no report is said plainly
"$CMD" run -- sh -c 'kill -KILL $$' 2>"$TMP/err"; rc=$?
[[ $rc == 137 ]] || fail "a job killed by SIGKILL: exit $rc, not 137"
grep -q 'killed by SIGKILL' "$TMP/err" || { cat "$TMP/err"; fail "no plain word that the job was killed"; }
grep -q 'made no driver call' "$TMP/err" && fail "a killed job is blamed on the program: $(cat "$TMP/err")"
note "killed job: $(head -1 "$TMP/err" | cut -c1-70)..."
"$CMD" run -- true 2>"$TMP/err"; rc=$?
[[ $rc == 0 ]] && grep -q 'made no driver call' "$TMP/err" || fail "a job with no driver call: $rc, $(cat "$TMP/err")"

# the summary is this run's: a report left by an earlier run at the same path is not shown when
# this run writes none (the job dies first)
"$CMD" run --report "$TMP/stale.json" -- "$B/progs/rpl_loop" train 6 >/dev/null 2>&1 || fail "rpl_loop failed"
[[ -s $TMP/stale.json ]] || fail "no report written"
"$CMD" run --report "$TMP/stale.json" -- sh -c 'kill -KILL $$' 2>"$TMP/err"
grep -q 'replayed' "$TMP/err" && { cat "$TMP/err"; fail "the summary shows the previous run's report"; }
"$CMD" run --report "$TMP/stale.json" -- "$B/progs/rpl_loop" train 6 >/dev/null 2>"$TMP/err"
grep -q '^cufold: replayed [1-9]' "$TMP/err" || { cat "$TMP/err"; fail "a rewritten report is not this run's"; }
note "a previous run's report is never this run's summary"

# with run ids (the library writes "run_id"): two jobs sharing a %p pattern count only their own
# processes
"$CMD" run -q --report "$TMP/probe.json" -- "$B/progs/rpl_loop" train 3 >/dev/null 2>&1
if python3 -c 'import json,sys; sys.exit(0 if "run_id" in json.load(open(sys.argv[1])) else 1)' "$TMP/probe.json"; then
	"$CMD" run --report "$TMP/shared.%p.json" -- "$B/workloads/launcher" --steps 3 >/dev/null 2>"$TMP/err1" &
	"$CMD" run --report "$TMP/shared.%p.json" -- "$B/progs/rpl_loop" train 30 >/dev/null 2>"$TMP/err2"
	wait
	grep -q 'over 4 processes' "$TMP/err1" || { cat "$TMP/err1"; fail "the launcher's summary is not its 4 processes"; }
	grep -q 'over' "$TMP/err2" && { cat "$TMP/err2"; fail "the single process's summary counts another job's"; }
	grep -q '^cufold: replayed [1-9]' "$TMP/err2" || { cat "$TMP/err2"; fail "no summary for the single process"; }
	note "two jobs sharing a report pattern: each counts its own"
	# a job stopped by SIGTERM through the wrapper (a scheduler's stop) keeps its report, and the
	# summary is of it
	"$CMD" run --report "$TMP/term.json" -- "$B/progs/rpl_loop" train 100000000 >/dev/null 2>"$TMP/err" &
	wrapper=$!
	for ((i = 0; i < 100; i++)); do [[ -n $(pgrep -P $wrapper) ]] && break; sleep 0.05; done
	sleep 1
	kill -TERM $wrapper
	for ((i = 0; i < 200; i++)); do alive $wrapper || break; sleep 0.1; done
	alive $wrapper && { kill -9 -- "-$(pgrep -P $wrapper)" $wrapper; fail "a job sent SIGTERM did not end in 20 s"; }
	wait $wrapper; rc=$?
	[[ $rc == 143 ]] || { cat "$TMP/err"; fail "a job sent SIGTERM: exit $rc, not 143"; }
	grep -q '^cufold: replayed [1-9]' "$TMP/err" || { cat "$TMP/err"; fail "no report from a job stopped by SIGTERM"; }
	note "a job stopped by SIGTERM: $(head -1 "$TMP/err")"
else
	note "SKIP two jobs sharing a report pattern, a stopped job's report: this libcufold.so writes no run_id yet"
fi

# the same with a library that takes CUFOLD_RUN_ID (a copy of this one that names it), and a job
# that writes the reports itself: its own (this run's id) and another job's, with the same pattern
cp "$CUFOLD" "$TMP/idlib.so" && printf 'CUFOLD_RUN_ID\0' >>"$TMP/idlib.so"
fake='{"cufold_report": {"mode": "replay", "pid": %s}, "version": "0.4.0", "run_id": "%s",
  "totals": {"windows": 2, "ops": 10}, "replay": {"ops_replayed": %s, "host_submissions_saved": 4}}'
# shellcheck disable=SC2016
"$CMD" run --lib "$TMP/idlib.so" --report "$TMP/ids.%p.json" -- sh -c '
	[ -n "$CUFOLD_RUN_ID" ] || exit 9
	printf "$1" 1 "$CUFOLD_RUN_ID" 8 >"$2/ids.1.json"
	printf "$1" 2 "r1-2-other" 5 >"$2/ids.2.json"' sh "$fake" "$TMP" 2>"$TMP/err"; rc=$?
[[ $rc == 0 ]] || fail "the job saw no CUFOLD_RUN_ID (exit $rc)"
grep -q '^cufold: replayed 8 of 10 ops (80.0 %)$' "$TMP/err" || { cat "$TMP/err"; fail "the summary is not this run's one report"; }
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/ids.1.json")
[[ $id =~ ^[A-Za-z0-9._-]{1,64}$ ]] || fail "run id '$id' is not [A-Za-z0-9._-]{1,64}"
note "the summary counts only reports with this run's id ($id)"
# a job that writes its report when stopped (as the library does on SIGTERM) and dies of the signal:
# the summary is that report's, said to be from a stopped job
# shellcheck disable=SC2016
"$CMD" run --lib "$TMP/idlib.so" --report "$TMP/st.%p.json" -- sh -c '
	trap "printf \"\$1\" 1 \"\$CUFOLD_RUN_ID\" 6 >\"\$2/st.1.json\"; trap - TERM; kill -TERM \$\$" TERM
	touch "$2/st.ready"; while :; do sleep 0.1; done' sh "$fake" "$TMP" 2>"$TMP/err" &
wrapper=$!
wait_for "$TMP/st.ready" || fail "the stopping job did not start"
kill -TERM $wrapper; wait $wrapper; rc=$?
[[ $rc == 143 ]] && grep -q '^cufold: replayed 6 of 10 ops.*stopped by SIGTERM' "$TMP/err" ||
	{ cat "$TMP/err"; fail "a job stopped by SIGTERM with a report: exit $rc, no summary of it"; }
note "stopped job with a report: $(grep "^cufold: replayed" "$TMP/err")"

# what a shell would say: 126 for a file that cannot be executed, 127 for none
"$CMD" run -- /etc/passwd 2>"$TMP/err"; rc=$?
[[ $rc == 126 ]] && grep -q 'permission denied' "$TMP/err" || fail "/etc/passwd: exit $rc, $(cat "$TMP/err")"
"$CMD" run -- "$TMP" 2>"$TMP/err"; rc=$?
[[ $rc == 126 ]] || fail "a directory as the program: exit $rc"
mkdir -p "$TMP/bin"; printf 'x\n' >"$TMP/bin/notexec"
PATH="$TMP/bin:$PATH" "$CMD" run -- notexec 2>"$TMP/err"; rc=$?
[[ $rc == 126 ]] && grep -q 'permission denied' "$TMP/err" || fail "not executable on PATH: exit $rc, $(cat "$TMP/err")"
"$CMD" run -- no-such-program-here 2>"$TMP/err"; rc=$?
[[ $rc == 127 ]] && grep -q 'not found' "$TMP/err" || fail "not found: exit $rc"
note "126 permission denied, 127 not found"

# --lib that is not a library: refused with one line, exit 2, and the job never ran
for notlib in /etc/passwd "$(command -v ls)" "$TMP/bin/notexec" "$TMP"; do
	"$CMD" run --lib "$notlib" -- sh -c "touch $TMP/ran" 2>"$TMP/err"; rc=$?
	[[ $rc == 2 && $(wc -l <"$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "--lib $notlib: exit $rc, not 2 with one line"; }
	[[ -e $TMP/ran ]] && fail "--lib $notlib: the job ran without cufold"
done
note "--lib not a library: $(cat "$TMP/err")"

out=$("$CMD" --version) || fail "--version failed"
[[ $out == "cufold $(cat VERSION)" ]] || fail "--version says '$out'"
note "$out"
