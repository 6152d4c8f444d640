#!/usr/bin/env bash
# output_atomic.sh - outputs are written whole or not at all: a report that cannot be written
# completely (a file size limit standing in for a full disk) leaves the previous report intact
# and no temporary file behind, and the warning says so; a file that merely starts like a
# report (someone's, or a torn one) is not replaced, while a complete report cufold wrote is.
# tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/sample_train"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
run_plain "$TMP/plain" "$prog" 3 4 || fail "sample_train failed"
mkdir "$TMP/d"
rep="$TMP/d/report.json"
parses() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }

# a complete report of cufold's
CUFOLD_MODE=trace CUFOLD_REPORT="$rep" run_cufold "$TMP/out" "$prog" 3 4 2>"$TMP/err" || fail "first run failed"
parses "$rep" || fail "the first report does not parse"
cp "$rep" "$TMP/first.json"
(( $(stat -c %s "$rep") > 2048 )) || fail "the report is too small for this test"

# a 2 KiB file size limit (SIGXFSZ ignored, so writes fail with EFBIG as on a full disk)
(
	trap '' XFSZ
	ulimit -f 2
	CUFOLD_MODE=trace CUFOLD_REPORT="$rep" LD_PRELOAD="$CUFOLD" "$prog" 3 4 >"$TMP/out" 2>"$TMP/err"
) || { cat "$TMP/err"; fail "the program failed under the size limit"; }
cmp -s "$TMP/plain" "$TMP/out" || fail "program output changed under the size limit"
grep -q "CUFOLD_REPORT=.*cannot write it" "$TMP/err" || { cat "$TMP/err"; fail "no warning about the report"; }
grep -q "left as it was" "$TMP/err" || { cat "$TMP/err"; fail "the warning does not say the old report stays"; }
parses "$rep" || { head -c 300 "$rep"; fail "a torn report was left behind"; }
cmp -s "$rep" "$TMP/first.json" || fail "the previous report was not kept"
[[ -z $(ls -A "$TMP/d" | grep -v '^report.json$') ]] || { ls -la "$TMP/d"; fail "a temporary file was left behind"; }
note "size limit: $(sed 's/^cufold\[[0-9:]*\] //' "$TMP/err")"

# files that start like a report but are not complete ones cufold wrote: left alone
for body in '{"cufold_report": "mine"' '{"cufold_report": {"x": 1}} trailing' '{"cufold_report": {"x": "}"}'; do
	printf '%s\n' "$body" >"$rep"
	CUFOLD_MODE=trace CUFOLD_REPORT="$rep" run_cufold "$TMP/out" "$prog" 3 4 2>"$TMP/err" || fail "run over '$body' failed"
	[[ $(cat "$rep") == "$body" ]] || fail "a file starting like a report was replaced: $body"
	grep -q "not cufold's own output" "$TMP/err" || { cat "$TMP/err"; fail "no warning for '$body'"; }
done

# a complete report of cufold's is replaced
cp "$TMP/first.json" "$rep"
CUFOLD_MODE=trace CUFOLD_REPORT="$rep" run_cufold "$TMP/out" "$prog" 2 4 2>"$TMP/err" || fail "the replacing run failed"
[[ ! -s "$TMP/err" ]] || { cat "$TMP/err"; fail "cufold complained about its own report"; }
parses "$rep" && ! cmp -s "$rep" "$TMP/first.json" || fail "cufold's own report was not replaced"
[[ $(ls -A "$TMP/d") == report.json ]] || { ls -la "$TMP/d"; fail "a temporary file was left behind"; }
