#!/usr/bin/env bash
# operator_inputs.sh - what an operator points cufold at, each answered with one clear line and
# an unharmed job: CUFOLD_LIBCUDA naming a FIFO is never opened (it hung the job before its
# first driver call) and naming cufold itself is refused; CUFOLD_CARDS=":mine.cards" (what
# "$CUFOLD_CARDS:mine.cards" gives when unset) loads mine.cards; "%p" in CUFOLD_LOG_FILE is the
# process id and "%%" a percent sign in output paths; the first info line and the report name
# the version (VERSION). tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/sample_train"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
run_plain "$TMP/plain" "$prog" 8 4 || fail "sample_train failed"
version=$(cat "$ROOT/VERSION")

# same LABEL ENV...: the program's output is as without cufold, within 60 s
same() {
	local label=$1
	shift
	timeout 60 env "$@" LD_PRELOAD="$CUFOLD" "$prog" 8 4 >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	[[ $rc != 124 ]] || fail "$label: the job hung"
	[[ $rc == 0 ]] || { cat "$TMP/err"; fail "$label: exit status $rc"; }
	cmp -s "$TMP/plain" "$TMP/out" || fail "$label: program output changed"
}

mkfifo "$TMP/driver.fifo"
same "FIFO driver" CUFOLD_LIBCUDA="$TMP/driver.fifo"
grep -q "cannot use $TMP/driver.fifo as the CUDA driver: it is a FIFO, not a regular file" "$TMP/err" ||
	{ cat "$TMP/err"; fail "no clear line about the FIFO driver"; }
note "FIFO: $(head -1 "$TMP/err" | sed 's/^cufold\[[0-9:]*\] //')"

same "cufold as the driver" CUFOLD_LIBCUDA="$CUFOLD"
grep -q "cannot use $CUFOLD as the CUDA driver: it is cufold itself" "$TMP/err" ||
	{ cat "$TMP/err"; fail "cufold itself was not refused as the driver"; }

# a card file named after an empty entry: read (its broken card is reported, so it was)
printf 'kernel broken_on_purpose\n  bogus statement\nend\n' >"$TMP/mine.cards"
same "cards after an empty entry" CUFOLD_CARDS=":$TMP/mine.cards" CUFOLD_MODE=replay
grep -q "mine.cards:2: kernel card rejected" "$TMP/err" || { cat "$TMP/err"; fail ":mine.cards was not read"; }
! grep -q "CUFOLD_CARDS.*is not valid" "$TMP/err" || { cat "$TMP/err"; fail ":mine.cards was refused"; }

# %p in the log file, %% in the report's path; the version in the log and the report
same "log file %p" CUFOLD_LOG=info CUFOLD_LOG_FILE="$TMP/log.%p" CUFOLD_REPORT="$TMP/r%%.%p.json" CUFOLD_RUN_ID=ops-1
logs=("$TMP"/log.[0-9]*)
[[ -f ${logs[0]} && ! -e "$TMP/log.%p" ]] || { ls "$TMP"; fail "%p was not expanded in CUFOLD_LOG_FILE"; }
pid=${logs[0]##*.}
grep -q "I shim.c:[0-9]*: cufold $version; mode " "${logs[0]}" || { cat "${logs[0]}"; fail "the first info line does not name the version"; }
[[ -f "$TMP/r%.$pid.json" ]] || { ls "$TMP"; fail "%% in CUFOLD_REPORT is not a percent sign"; }
python3 - "$TMP/r%.$pid.json" "$version" <<'PY' || fail "the report does not name the version and run"
import json, sys
r = json.load(open(sys.argv[1]))
keys = list(r)
assert keys[:3] == ["cufold_report", "version", "run_id"], keys[:3]
assert r["version"] == sys.argv[2] and r["run_id"] == "ops-1", (r["version"], r["run_id"])
PY
exit 0
