#!/usr/bin/env bash
# replay_observe.sh - what the host observes under replay. (1) Polling makes progress: a thread
# polling an event whose record replay holds back is answered CUDA_ERROR_NOT_READY, and the held
# work is submitted once it stops growing; a thread polling its own work is answered NOT_READY
# once and submits when it queries again with no op in between (rpl_loop pollown); no query ends
# a window; results bit-identical over 20 seeds (rpl_loop poll). (2) No deferred
# error is lost: a kept call whose submission fails is returned by the program's next observing
# call, so the program fails as it does without cufold, never exits 0 with a wrong result, and
# the log and report name the op. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"

# ---- (1) polling
# the gate off: this is about polling, and under a sanitizer cufold's own CPU time (which the gate
# charges) can make it send the shape back to eager, leaving nothing held back to poll
export CUFOLD_GATE=0
same_output_over_seeds "$prog" poll 12
# the counts below, and the failures injected at given calls further down, are for the windows
# as the program issues them: batch-kernel (which the identical-output check above keeps) fuses
# their launches and moves where segments end and which call a launch is
export CUFOLD_RULES=-batch-kernel
CUFOLD_REPORT="$TMP/poll.json" run_cufold "$TMP/poll.out" "$prog" poll 12 || fail "poll exited $?"
python3 - "$TMP/poll.json" <<'PY' || fail "polling did not behave as documented"
import json, sys
r = json.load(open(sys.argv[1]))
rp, q = r["replay"], r["boundaries"]["QUERY"]
if q["windows_closed"] != 0 or q["calls"] < 12:
    sys.exit("queries: %s (expected many calls, no window closed)" % q)
if rp["queries_answered_not_ready"] < 1:
    sys.exit("no query was answered NOT_READY for held-back work")
# every replayed step held its event record back while its issuer waited: each was submitted
# by a poll, its own (odd steps) or the watchdog's after the run stopped growing (even steps)
if rp["fallbacks"].get("POLL", 0) < 6:
    sys.exit("POLL submissions: %s" % rp["fallbacks"])
print("-- poll: %d queries, %d answered NOT_READY, %d held runs submitted by polls" %
      (q["calls"], rp["queries_answered_not_ready"], rp["fallbacks"]["POLL"]))
PY

# (1b) the thread that made the held-back calls queries them once and goes on with the step
# (CuPy's pinned memory pool after each staged copy): answered NOT_READY, the run keeps growing and
# replays whole, no POLL fallback; where it spins on the query (every third step) the second query
# with no op in between submits it, so the spin ends
same_output_over_seeds "$prog" pollown 12
CUFOLD_REPORT="$TMP/pollown.json" run_cufold "$TMP/pollown.out" "$prog" pollown 20 || fail "pollown exited $?"
python3 - "$TMP/pollown.json" <<'PY' || fail "a thread's query of its own held-back work did not behave as documented"
import json, sys
r = json.load(open(sys.argv[1]))
rp = r["replay"]
nr, poll = rp["queries_answered_not_ready"], rp["fallbacks"].get("POLL", 0)
# 20 steps, about 16 replayed; of those about 5 spin (step % 3 == 2): their POLL submits
if nr < 8 or not 1 <= poll <= 7 or r["boundaries"]["QUERY"]["windows_closed"]:
    sys.exit("pollown: %d queries answered NOT_READY, fallbacks %s, queries %s" % (nr, rp["fallbacks"], r["boundaries"]["QUERY"]))
print("-- pollown: %d queries answered NOT_READY, %d held runs submitted by a spinning query" % (nr, poll))
PY

unset CUFOLD_GATE

# ---- (2) deferred errors
# call 130 of cuLaunchKernel is in a replayed, matched step of `mismatch` 8 (a kept launch: which
# kernel it is moves with what went eagerly before, and differs between levels; the log and the
# report must name the same one)
for err in "" ":CUDA_ERROR_LAUNCH_FAILED"; do
	for opt in 1 0; do
		rule="cuLaunchKernel:130$err"
		name=${err#:}; name=${name:-CUDA_ERROR_UNKNOWN}
		SIMCUDA_FAIL=$rule run_plain "$TMP/e.plain" "$prog" mismatch 8 2>"$TMP/e.plain.err" &&
			fail "$rule: the program did not fail without cufold"
		grep -q "$name" "$TMP/e.plain.err" || { cat "$TMP/e.plain.err"; fail "$rule: no $name without cufold"; }
		rc=0
		SIMCUDA_FAIL=$rule CUFOLD_OPT=$opt CUFOLD_REPORT="$TMP/e.json" \
			run_cufold "$TMP/e.cufold" "$prog" mismatch 8 2>"$TMP/e.err" || rc=$?
		((rc != 0)) || { cat "$TMP/e.cufold" "$TMP/e.err"; fail "$rule opt $opt: exit 0 with cufold (the error was lost)"; }
		grep -q "failed: $name" "$TMP/e.err" || { cat "$TMP/e.err"; fail "$rule opt $opt: the program never saw $name"; }
		kernel=$(sed -n 's/.*replay: deferred \([a-z_]*\) (cuLaunchKernel, op [0-9]*) failed with error.*/\1/p' "$TMP/e.err" | head -n 1)
		case $kernel in
		axpy | add | mul | scale) ;;
		*) cat "$TMP/e.err"; fail "$rule opt $opt: the log does not name the failed op" ;;
		esac
		python3 - "$TMP/e.json" "$name" "$kernel" <<'PY' || fail "$rule opt $opt: report"
import json, sys
d = json.load(open(sys.argv[1]))["replay"]["deferred_errors"]
sticky = sys.argv[2] == "CUDA_ERROR_LAUNCH_FAILED"
if d["failed"] != 1 or d["returned"] < 1 or d["unseen_at_exit"] != 0:
    sys.exit("deferred_errors: %s" % d)
f = d["first"][0]
if f["name"] != sys.argv[3] or f["api"] != "cuLaunchKernel" or f["sticky"] != sticky or not f["returned"]:
    sys.exit("deferred_errors: %s" % d)
PY
	done
done
note "a failed deferred call's error reaches the program (unknown and sticky errors, levels 0 and 1)"

# Around it: every call number of a replayed step ends the same way with and without cufold:
# the same output, or a failure in both; never exit 0 with another checksum.
no_silent_wrong_result "100 120 128 130 140 160 180 200" "$prog" mismatch 8
note "no silent wrong result around the replayed steps"
