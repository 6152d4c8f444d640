#!/usr/bin/env bash
# shim_config.sh - configuration as a user meets it: a bad value of a CUFOLD_* variable is
# reported once on stderr (variable, value, what is accepted) and the default is used; an
# unknown CUFOLD_ name is reported; CUFOLD_LOG_FILE takes the log; CUFOLD_LIBCUDA chooses the
# driver; replay mode says it traces for now. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/icpt_direct"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
run_plain "$TMP/plain" "$prog" || fail "icpt_direct failed without cufold"

# a bad mode: one message, then the default (replay, which also traces: counts at info)
env LD_PRELOAD="$CUFOLD" CUFOLD_MODE=fast CUFOLD_LOG=info "$prog" >"$TMP/out" 2>"$TMP/err" || fail "bad mode broke the run"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with a bad CUFOLD_MODE"
[[ $(grep -c 'CUFOLD_MODE=fast' "$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "the bad value was not reported exactly once"; }
grep 'CUFOLD_MODE=fast' "$TMP/err" | grep -q 'accepted: off, trace, replay); using replay' || fail "message incomplete"
grep -q 'mode replay; driver ' "$TMP/err" || fail "the mode line does not name replay"
grep -q 'driver calls intercepted' "$TMP/err" || fail "the default mode did not trace"

# several bad values: one line each; a bad CUFOLD_LOG still reaches stderr
env LD_PRELOAD="$CUFOLD" CUFOLD_LOG=loud CUFOLD_OPT=7 CUFOLD_WARMUP=-1 CUFOLD_CALLSITES=yes "$prog" >"$TMP/out" \
	2>"$TMP/err" || fail "bad values broke the run"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with bad values"
[[ $(wc -l <"$TMP/err") == 4 ]] || { cat "$TMP/err"; fail "expected exactly 4 lines for 4 bad values"; }
for v in CUFOLD_LOG=loud CUFOLD_OPT=7 CUFOLD_WARMUP=-1 CUFOLD_CALLSITES=yes; do
	grep -q "$v is not valid (accepted: " "$TMP/err" || fail "$v not reported"
done

# an unknown variable (a typo)
env LD_PRELOAD="$CUFOLD" CUFOLD_MDOE=off "$prog" >"$TMP/out" 2>"$TMP/err" || fail "unknown variable broke the run"
grep -q 'CUFOLD_MDOE is not a cufold variable' "$TMP/err" || fail "unknown variable not reported"

# the log file gets the log, stderr stays quiet
env LD_PRELOAD="$CUFOLD" CUFOLD_MODE=trace CUFOLD_LOG=debug CUFOLD_LOG_FILE="$TMP/log" "$prog" >"$TMP/out" \
	2>"$TMP/err" || fail "CUFOLD_LOG_FILE broke the run"
[[ ! -s "$TMP/err" ]] || { cat "$TMP/err"; fail "stderr not quiet with CUFOLD_LOG_FILE"; }
grep -q 'calls cuInit 1$' "$TMP/log" || fail "the log file did not get the counts"
grep -Eq '^cufold\[[0-9]+:[0-9]+\] I shim\.c:[0-9]+: ' "$TMP/log" || fail "log line format"

# CUFOLD_LIBCUDA: a path that does not exist is reported, and cufold falls back to libcuda.so.1
env LD_PRELOAD="$CUFOLD" CUFOLD_LIBCUDA=/nonexistent/libcuda.so.1 "$prog" >"$TMP/out" 2>"$TMP/err" ||
	{ cat "$TMP/err"; fail "a bad CUFOLD_LIBCUDA broke the run"; }
grep -q 'cannot load the CUDA driver /nonexistent/libcuda.so.1' "$TMP/err" || { cat "$TMP/err"; fail "bad CUFOLD_LIBCUDA not reported"; }
grep -q 'using libcuda.so.1 instead' "$TMP/err" || fail "no fallback to libcuda.so.1"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs after the fallback"
# the explicit path of the software device works
env LD_PRELOAD="$CUFOLD" CUFOLD_LIBCUDA="$ROOT/$B/simcuda/libcuda.so.1" "$prog" >"$TMP/out" ||
	fail "CUFOLD_LIBCUDA with the device's path failed"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with CUFOLD_LIBCUDA"
note "configuration errors reported once; defaults used"
