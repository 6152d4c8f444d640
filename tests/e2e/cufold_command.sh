#!/usr/bin/env bash
# cufold_command.sh - the operator's command, scripts/cufold: `run` passes the exit status through,
# keeps an existing LD_PRELOAD, sets the variables its options name and prints a summary; bad
# options and missing programs fail with a message; `report` reads one report and a 4-rank job's
# reports (merged, --json parses); `check` finds the software device; `make install` then the
# installed command works with the installed library, and `make uninstall` leaves no file. tests layer.
source "$(dirname "$0")/lib.sh"

CMD="$ROOT/scripts/cufold"
export CUFOLD_LIB="$CUFOLD"
OTHER="$ROOT/$B/plugins/icpt_next_b.so" # a harmless library: it only defines a function

# exit status, signals
"$CMD" run -q -- sh -c 'exit 3'; rc=$?
[[ $rc == 3 ]] || fail "run: exit 3 came back as $rc"
"$CMD" run -q -- sh -c 'kill -TERM $$'; rc=$?
[[ $rc == 143 ]] || fail "run: SIGTERM came back as $rc, not 143"
note "exit status passed through (3, SIGTERM as 143)"

# LD_PRELOAD kept, cufold first; options map to variables; CUFOLD_LIB not passed on
out=$(LD_PRELOAD="$OTHER" "$CMD" run -q -- sh -c 'echo "$LD_PRELOAD"')
[[ "$out" == "$CUFOLD $OTHER" ]] || fail "run: child's LD_PRELOAD is '$out', expected '$CUFOLD $OTHER'"
note "LD_PRELOAD kept: $out"
out=$("$CMD" run -q --opt 2 --mode trace --gate 0 --churn 0 --log info --cards /x.cards -- \
	sh -c 'echo "$CUFOLD_OPT $CUFOLD_MODE $CUFOLD_GATE $CUFOLD_CHURN $CUFOLD_LOG $CUFOLD_CARDS ${CUFOLD_LIB-unset}"')
[[ "$out" == "2 trace 0 0 info /x.cards unset" ]] || fail "run: options gave '$out'"
"$CMD" run --help | grep -q 'CUFOLD_OPT' || fail "run --help does not list the variables"
note "options set the variables: $out"

# usage errors and missing programs: one message, non-zero
for bad in "--opt 7 -- true" "--bogus -- true" "--mode fast -- true" "--churn off -- true" ""; do
	# shellcheck disable=SC2086
	"$CMD" run $bad >/dev/null 2>"$TMP/err"; rc=$?
	[[ $rc == 2 && $(wc -l <"$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "run $bad: exit $rc, not 2 with one line"; }
done
"$CMD" run -- "$TMP/no-such-program" 2>"$TMP/err"; rc=$?
[[ $rc == 127 ]] && grep -q 'not found' "$TMP/err" || fail "missing program: exit $rc, $(cat "$TMP/err")"
"$CMD" frobnicate 2>/dev/null; [[ $? == 2 ]] || fail "unknown command did not exit 2"
"$CMD" report "$TMP/none.json" 2>"$TMP/err"; [[ $? == 1 ]] && grep -q none.json "$TMP/err" || fail "report of a missing file"
"$CMD" run --lib "$TMP/nolib.so" -- true 2>"$TMP/err"; [[ $? == 1 ]] && grep -q nolib "$TMP/err" || fail "run with a missing library"
note "bad options, missing programs and files fail with one message"

# a replayed run: the summary, and the report of it
"$CMD" run --report "$TMP/r.json" -- "$B/progs/rpl_loop" train 20 >"$TMP/out" 2>"$TMP/err" || fail "rpl_loop under cufold run failed"
grep -q 'checksum=' "$TMP/out" || fail "rpl_loop printed no checksum"
grep -Eq '^cufold: replayed [1-9][0-9]* of [0-9]+ ops' "$TMP/err" || { cat "$TMP/err"; fail "no summary"; }
grep -q '^cufold: host submissions saved: [1-9]' "$TMP/err" || fail "summary has no submissions saved"
grep -q '^cufold: fallbacks: ' "$TMP/err" || fail "summary has no fallbacks line"
[[ $(grep -c '^cufold: ' "$TMP/err") == 3 ]] || { cat "$TMP/err"; fail "summary is not three lines"; }
"$CMD" run -- "$B/progs/rpl_loop" train 5 >/dev/null 2>"$TMP/err2" || fail "run with a temporary report failed"
grep -q '^cufold: replayed' "$TMP/err2" || fail "no summary with the temporary report"
"$CMD" report "$TMP/r.json" >"$TMP/rep" || fail "report failed"
for s in 'ops replayed' 'submissions saved' 'Top window shapes' 'Why work ran eagerly' 'HOST_COPY' \
	'Fallbacks to eager' 'Templates the gate turned off' 'Deferred errors'; do
	grep -q "$s" "$TMP/rep" || { cat "$TMP/rep"; fail "report lacks '$s'"; }
done
note "run prints the summary; report: $(grep 'ops replayed' "$TMP/rep" | tr -s ' ')"

# what the device runs per replayed window after the rewrites: rw_bk_streams fuses its features'
# 18 launches into 3 (tests/e2e/rewrite_batch_kernel.sh checks the device's counters agree); with
# the chain through events 6 of them stay apart, and the report says why
for mode in fuse chain; do
	"$CMD" run -q --report "$TMP/bk_$mode.json" -- "$B/progs/rw_bk_streams" $mode 12 >/dev/null 2>&1 ||
		fail "rw_bk_streams $mode under cufold run failed"
	"$CMD" report "$TMP/bk_$mode.json" >"$TMP/bk_$mode.txt" || fail "report of rw_bk_streams $mode failed"
done
grep -q '^Work the device runs per replayed window' "$TMP/bk_fuse.txt" || { cat "$TMP/bk_fuse.txt"; fail "report shows no device work"; }
grep -q '^    kernels 18 -> 3$' "$TMP/bk_fuse.txt" || { cat "$TMP/bk_fuse.txt"; fail "report: not 18 -> 3 kernels"; }
grep -q '^    batch-kernel: 18 launches run as 3$' "$TMP/bk_fuse.txt" || fail "report: the fused launches"
grep -q '^    kernels 18 -> 13$' "$TMP/bk_chain.txt" || { cat "$TMP/bk_chain.txt"; fail "report: chain not 18 -> 13"; }
grep -q 'left alone: 12 with no other launch' "$TMP/bk_chain.txt" || fail "report: chain's launches left alone"
"$CMD" report --json "$TMP/bk_fuse.json" | python3 -c '
import json, sys
w = json.load(sys.stdin)["device_work"]
sys.exit(0 if len(w) == 1 and w[0]["kernels"] == [18, 3] and w[0]["kernels_fused"] == [18, 3] else "device_work: %s" % w)' ||
	fail "report --json: device_work"
note "report: the device's work per replayed window ($(grep '^    kernels' "$TMP/bk_fuse.txt" | tr -s ' '))"

# a 4-rank job: one report per process, merged
"$CMD" run --report "$TMP/job.%p.json" -- "$B/workloads/launcher" --steps 4 >"$TMP/out" 2>"$TMP/err" || fail "launcher failed"
grep -q 'over 4 processes' "$TMP/err" || { cat "$TMP/err"; fail "the job's summary does not merge 4 reports"; }
"$CMD" report "$TMP"/job.*.json >"$TMP/rep" || fail "report of 4 ranks failed"
grep -q '4 processes' "$TMP/rep" || fail "report of 4 ranks does not say 4 processes"
grep -q 'BARRIER' "$TMP/rep" || fail "the job's report does not show its barrier kernels"
"$CMD" report --json "$TMP"/job.*.json >"$TMP/rep.json" || fail "report --json failed"
python3 - "$TMP/rep.json" <<'EOF' || fail "report --json is not what was expected"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["totals"]["processes"] == 4, a["totals"]
assert a["totals"]["ops_replayed"] > 0
assert {"shapes_not_replayed", "boundaries", "fallbacks", "gate_off", "deferred_errors"} <= set(a["eager"])
assert any(b["kind"] == "BARRIER" and b["windows_closed"] > 0 for b in a["eager"]["boundaries"])
EOF
note "4 reports merged, --json parses"

# check on the software device. Under ThreadSanitizer the software device needs libtsan, which
# cannot be loaded into a running Python (static TLS): check must say so and fail, not crash.
if [[ ${SAN:-} == thread ]]; then
	"$CMD" check >"$TMP/check" && { cat "$TMP/check"; fail "check passed without a loadable driver"; }
	grep -q 'driver: *NOT FOUND.*static TLS' "$TMP/check" && grep -q 'preload: *works' "$TMP/check" ||
		{ cat "$TMP/check"; fail "check does not say why the driver did not load"; }
	note "SKIP check's device lines under ThreadSanitizer (a TSan-built driver cannot be dlopen'ed into Python: static TLS)"
else
	"$CMD" check >"$TMP/check" || { cat "$TMP/check"; fail "check failed on the software device"; }
	grep -q 'simcuda' "$TMP/check" && grep -q 'cuFuncGetParamInfo' "$TMP/check" && grep -q 'preload: *works' "$TMP/check" ||
		{ cat "$TMP/check"; fail "check does not show the device, the parameter layouts and the preload"; }
	note "check: $(grep 'device 0' "$TMP/check" | tr -s ' ')"
fi

# make install / uninstall, with PREFIX and with DESTDIR; the installed command finds its library.
# -o: the library as built (another change being made in the tree must not rebuild it here)
mk() { make --no-print-directory -s BUILD="$B" -o "$B/libcufold.so" "$@" >/dev/null || fail "make $*"; }
for v in "PREFIX=$TMP/p" "PREFIX=/opt/cf DESTDIR=$TMP/d"; do
	# shellcheck disable=SC2086
	mk install $v
	base=$TMP/p; [[ $v == *DESTDIR* ]] && base=$TMP/d/opt/cf
	for f in lib/libcufold.so bin/cufold share/man/man1/cufold.1 share/cufold/example.cards share/cufold/test-kernels.cards; do
		[[ -f $base/$f ]] || fail "make install $v: no $f"
	done
	out=$(env -u CUFOLD_LIB "$base/bin/cufold" run -q -- sh -c 'echo "$LD_PRELOAD"')
	[[ "$out" == "$base/lib/libcufold.so" ]] || fail "installed cufold preloads '$out'"
	env -u CUFOLD_LIB "$base/bin/cufold" run --cards "$base/share/cufold/test-kernels.cards" -- \
		"$B/progs/rpl_loop" train 10 >/dev/null 2>"$TMP/err" || fail "installed cufold run failed"
	grep -q '^cufold: replayed [1-9]' "$TMP/err" || { cat "$TMP/err"; fail "installed cufold replayed nothing"; }
	man -l "$base/share/man/man1/cufold.1" 2>/dev/null | grep -q CUFOLD_MIN_OPS ||
		grep -q CUFOLD_MIN_OPS "$base/share/man/man1/cufold.1" || fail "the man page lacks the variables"
	# shellcheck disable=SC2086
	mk uninstall $v
	left=$(find "$TMP/p" "$TMP/d" -type f 2>/dev/null)
	[[ -z $left ]] || fail "make uninstall $v left: $left"
	note "make install/uninstall $v"
done

# which call ended the windows: with call sites on, the report names the program's caller of each
# boundary (closed_by_site) and `cufold report` shows it under its boundary kind
"$CMD" run -q --callsites 1 --report "$TMP/cs.json" -- "$B/progs/rpl_loop" train 6 >/dev/null 2>&1 ||
	fail "run with call sites failed"
python3 - "$TMP/cs.json" <<'PY' || fail "the report does not name the boundary's call site"
import json, sys
shapes = json.load(open(sys.argv[1]))["shapes"]
if not any((s.get("closed_by_site") or "").startswith("observe+") for s in shapes):
    sys.exit("closed_by_site: %s" % [s.get("closed_by_site") for s in shapes])
PY
"$CMD" report "$TMP/cs.json" >"$TMP/cs.txt" || fail "report exited $?"
grep -q "called at observe+0x[0-9a-f]* < mode_train" "$TMP/cs.txt" || { cat "$TMP/cs.txt"; fail "report shows no boundary call site"; }
note "the boundary's call site is in the report and in cufold report"
