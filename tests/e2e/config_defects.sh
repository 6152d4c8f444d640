#!/usr/bin/env bash
# config_defects.sh - configuration defects found by trying bad input (issue 12), each run with a
# timeout so that a hang fails: CUFOLD_CARDS and CUFOLD_LOG_FILE naming a FIFO or a device are
# refused with one warning (cards: none from there; log: stderr), a log file behind a symbolic
# link is refused; CUFOLD_LIBCUDA naming cufold itself (or a link to it) or a library that is not
# a driver falls back to libcuda.so.1; an unknown name in CUFOLD_RULES is reported once with the
# known rules; a rule CUFOLD_RULES switches on applies at CUFOLD_OPT=0 too, and a shape whose
# guards keep failing is still replayed without any rule. Results bit for bit as without cufold
# throughout. tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan

prog=$B/progs/icpt_direct
rwprog=$B/progs/rw_coalesce
[[ -x $prog && -x $rwprog && -f $CUFOLD ]] || fail "$prog, $rwprog or $CUFOLD not built"
run_plain "$TMP/plain" "$prog" || fail "icpt_direct failed without cufold"
run_plain "$TMP/rwplain" "$rwprog" steady 8 || fail "rw_coalesce failed without cufold"
export CUFOLD_MODE=replay
unset CUFOLD_RULES CUFOLD_OPT CUFOLD_LOG CUFOLD_LOG_FILE CUFOLD_LIBCUDA

# cf_run OUT ERR prog args...: with cufold, stdout to OUT, stderr to ERR; a hang is a failure
cf_run() {
	local out=$1 err=$2 rc
	shift 2
	timeout -k 5 60 env LD_PRELOAD="$CUFOLD" "$@" >"$out" 2>"$err"
	rc=$?
	[[ $rc != 124 && $rc != 137 ]] || { cat "$err"; fail "hung (timed out): $*"; }
	[[ $rc == 0 ]] || { cat "$err"; fail "exited $rc: $*"; }
}
# once ERR PATTERN WHAT: exactly one line of ERR matches PATTERN
once() {
	[[ $(grep -c -- "$2" "$1") == 1 ]] || { cat "$1"; fail "$3: expected exactly one line matching '$2'"; }
}

# CUFOLD_CARDS naming a FIFO: refused, no hang, no cards from it
mkfifo "$TMP/fifo"
cf_run "$TMP/out" "$TMP/err" CUFOLD_CARDS="$TMP/fifo" "$rwprog" steady 8
cmp -s "$TMP/rwplain" "$TMP/out" || fail "output differs with CUFOLD_CARDS naming a FIFO"
once "$TMP/err" "CUFOLD_CARDS.*$TMP/fifo: it is a FIFO, not a regular file" "CUFOLD_CARDS=FIFO"
[[ $(wc -l <"$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "more than one line for a FIFO in CUFOLD_CARDS"; }
# a device: the real reason, not "Is a directory"; the other files of the list still load
cf_run "$TMP/out" "$TMP/err" CUFOLD_CARDS="/dev/null:$ROOT/tests/kernels/test-kernels.cards" "$rwprog" steady 8
cmp -s "$TMP/rwplain" "$TMP/out" || fail "output differs with CUFOLD_CARDS naming /dev/null"
once "$TMP/err" "CUFOLD_CARDS.*/dev/null: it is a character device, not a regular file" "CUFOLD_CARDS=/dev/null"
! grep -q 'Is a directory' "$TMP/err" || fail "/dev/null reported as a directory"
note "CUFOLD_CARDS: a FIFO and a device refused with their reason"

# CUFOLD_LOG_FILE naming a FIFO: refused, the log goes to stderr
cf_run "$TMP/out" "$TMP/err" CUFOLD_LOG=info CUFOLD_LOG_FILE="$TMP/fifo" "$prog"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with CUFOLD_LOG_FILE naming a FIFO"
once "$TMP/err" "CUFOLD_LOG_FILE=$TMP/fifo cannot take the log (it is a FIFO, not a regular file); logging to stderr" \
	"CUFOLD_LOG_FILE=FIFO"
grep -q 'mode replay; driver ' "$TMP/err" || fail "the log did not go to stderr after refusing the FIFO"
cf_run "$TMP/out" "$TMP/err" CUFOLD_LOG_FILE=/dev/null "$prog"
once "$TMP/err" "CUFOLD_LOG_FILE=/dev/null cannot take the log (it is a character device, not a regular file)" \
	"CUFOLD_LOG_FILE=/dev/null"
# ... or behind a symbolic link, dangling or not: never followed, the target never created or written
ln -s "$TMP/target.log" "$TMP/link.log"
cf_run "$TMP/out" "$TMP/err" CUFOLD_LOG=info CUFOLD_LOG_FILE="$TMP/link.log" "$prog"
once "$TMP/err" "CUFOLD_LOG_FILE=$TMP/link.log cannot take the log (it is a symbolic link" "CUFOLD_LOG_FILE=link"
grep -q 'mode replay; driver ' "$TMP/err" || fail "the log did not go to stderr after refusing the link"
[[ ! -e $TMP/target.log ]] || fail "the log was created through a dangling symbolic link"
: >"$TMP/target.log"
cf_run "$TMP/out" "$TMP/err" CUFOLD_LOG=info CUFOLD_LOG_FILE="$TMP/link.log" "$prog"
once "$TMP/err" "CUFOLD_LOG_FILE=$TMP/link.log cannot take the log (it is a symbolic link" "CUFOLD_LOG_FILE=link"
[[ ! -s $TMP/target.log ]] || fail "the log was written through a symbolic link"
note "CUFOLD_LOG_FILE: a FIFO, a device and a symbolic link refused; the log on stderr"

# CUFOLD_LIBCUDA naming cufold itself, directly or through a link: refused, libcuda.so.1 used
ln -s "$CUFOLD" "$TMP/libcuda-link.so"
for lib in "$CUFOLD" "$TMP/libcuda-link.so"; do
	cf_run "$TMP/out" "$TMP/err" CUFOLD_LIBCUDA="$lib" "$prog"
	cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with CUFOLD_LIBCUDA=$lib"
	once "$TMP/err" "cannot use $lib as the CUDA driver: it is cufold itself" "CUFOLD_LIBCUDA=$lib"
	once "$TMP/err" "using libcuda.so.1 instead" "CUFOLD_LIBCUDA=$lib"
done
# a library that loads but is not a driver
cf_run "$TMP/out" "$TMP/err" CUFOLD_LIBCUDA=libc.so.6 "$prog"
cmp -s "$TMP/plain" "$TMP/out" || fail "output differs with CUFOLD_LIBCUDA=libc.so.6"
once "$TMP/err" "cannot use libc.so.6 as the CUDA driver: it does not export cuInit" "CUFOLD_LIBCUDA=libc.so.6"
once "$TMP/err" "using libcuda.so.1 instead" "CUFOLD_LIBCUDA=libc.so.6"
note "CUFOLD_LIBCUDA: cufold itself and a non-driver refused; libcuda.so.1 used"

# an unknown rule name: one warning naming it and listing the known rules; the rest applies
cf_run "$TMP/out" "$TMP/err" CUFOLD_RULES=+batch-cpy,-coalesce "$rwprog" steady 8
cmp -s "$TMP/rwplain" "$TMP/out" || fail "output differs with an unknown rule"
once "$TMP/err" "CUFOLD_RULES=+batch-cpy,-coalesce: unknown rule batch-cpy ignored (known: .*batch-copy.*coalesce" \
	"CUFOLD_RULES=+batch-cpy"
[[ $(wc -l <"$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "more than one line for an unknown rule"; }
note "CUFOLD_RULES: an unknown name reported once with the known rules"

# rules_of REPORT: the rules that fired, over the templates of the report, as "name:count ..."
rules_of() {
	python3 - "$1" <<'PY'
import json, sys
fired = {}
for t in json.load(open(sys.argv[1])).get("replay", {}).get("templates", []):
    for k, v in t.get("rewrite", {}).get("rules", {}).items():
        fired[k] = fired.get(k, 0) + v
print(" ".join("%s:%d" % kv for kv in sorted(fired.items())))
PY
}
# a rule switched on by CUFOLD_RULES applies at CUFOLD_OPT=0, with the same results
for rule in batch-copy coalesce; do
	cf_run "$TMP/out" "$TMP/err" CUFOLD_OPT=0 CUFOLD_RULES=+$rule CUFOLD_REPORT="$TMP/r0.json" "$rwprog" steady 8
	cmp -s "$TMP/rwplain" "$TMP/out" || fail "output differs at CUFOLD_OPT=0 CUFOLD_RULES=+$rule"
	fired=$(rules_of "$TMP/r0.json")
	[[ $fired == "$rule:"* && $fired != *" "* ]] || fail "CUFOLD_OPT=0 CUFOLD_RULES=+$rule: rules fired '$fired'"
	CUFOLD_OPT=0 CUFOLD_RULES=+$rule SEEDS=5 same_output_over_seeds "$rwprog" moving 24
done
cf_run "$TMP/out" "$TMP/err" CUFOLD_OPT=0 CUFOLD_REPORT="$TMP/r0.json" "$rwprog" steady 8
[[ -z $(rules_of "$TMP/r0.json") ]] || fail "CUFOLD_OPT=0 alone rewrote: $(rules_of "$TMP/r0.json")"
# a shape whose guards failed RPL_GUARD_RETIRES (3) times is replayed without any rule, even one
# switched on at level 0 (moving buffers break the guards of every rewritten plan)
lvl1=+duplicate,+identity-cat,+slice-glue,+dead-write,+copy-chain,+coalesce,+batch-copy
cf_run "$TMP/out" "$TMP/err" CUFOLD_OPT=0 CUFOLD_RULES=$lvl1 CUFOLD_REPORT="$TMP/rm.json" "$rwprog" moving 24
python3 - "$TMP/rm.json" <<'PY' || fail "a shape retired by failed guards was rewritten again at CUFOLD_OPT=0"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
ts = sorted(r["templates"], key=lambda t: t["built_from_window"])
by_guard = [t for t in ts if "rewrite guard" in (t.get("retired") or "")]
last = by_guard[-1]["built_from_window"] if by_guard else None
after = [t for t in ts if last is not None and t["built_from_window"] > last]
print("GUARD fallbacks %s; retired by guards %d; rules of the templates built after: %s" %
      (r["fallbacks"].get("GUARD", 0), len(by_guard), [t["rewrite"]["rules"] for t in after]))
if len(by_guard) != 3 or not after or any(t["rewrite"]["rules"] for t in after):
    sys.exit("expected 3 templates retired by failed guards, then only unrewritten ones")
PY
note "CUFOLD_RULES switches rules on at CUFOLD_OPT=0; unrewritten replay after failed guards"
