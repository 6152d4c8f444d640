#!/usr/bin/env bash
# capture_outputs.sh - cufold's output files are written safely: a path in a missing folder or in
# a read-only one gives one clear message naming the variable, no crash and unchanged program
# output; a symlink planted at the path is not followed; an existing file that is not cufold's
# own output is not truncated, while cufold's own earlier output is replaced; "%p" becomes the
# process id, in CUFOLD_DOT's folder too; CUFOLD_DOT naming a file, or a symlink to a folder, is
# refused. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/sample_train"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
run_plain "$TMP/plain" "$prog" 3 4 || fail "sample_train failed"

# run_bad LABEL VAR=value...: the program runs as without cufold and cufold says exactly one
# line about each variable given, naming it
run_bad() {
	local label=$1 v
	shift
	env CUFOLD_MODE=trace "$@" LD_PRELOAD="$CUFOLD" "$prog" 3 4 >"$TMP/out" 2>"$TMP/err" ||
		{ cat "$TMP/err"; fail "$label: the program failed"; }
	cmp -s "$TMP/plain" "$TMP/out" || fail "$label: program output changed"
	[[ $(wc -l <"$TMP/err") == $# ]] || { cat "$TMP/err"; fail "$label: expected $# message(s)"; }
	for v in "$@"; do
		grep -q "W engine.c:[0-9]*: ${v%%=*}=.*: cannot write it (" "$TMP/err" ||
			{ cat "$TMP/err"; fail "$label: no clear message for ${v%%=*}"; }
	done
	note "$label: $(head -1 "$TMP/err" | sed 's/^cufold\[[0-9:]*\] //')"
}

run_bad "missing folder" CUFOLD_REPORT="$TMP/missing/dir/report.json"
# a read-only folder; root ignores permissions, so use one the kernel refuses
ro="$TMP/ro"
mkdir "$ro" && chmod 555 "$ro"
if touch "$ro/probe" 2>/dev/null; then
	rm -f "$ro/probe"
	ro=/sys
fi
run_bad "read-only folder" CUFOLD_REPORT="$ro/cufold-report.json"
[[ ! -e "$ro/cufold-report.json" ]] || fail "a report appeared in the read-only folder"
run_bad "every output unwritable" CUFOLD_REPORT="$TMP/missing/r.json" CUFOLD_TRACE="$ro/t.json" \
	CUFOLD_DOT="$TMP/missing/deeper/dot"

# a symlink at the path: not followed, the target keeps its bytes
echo precious >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/link.json"
run_bad "symlink" CUFOLD_REPORT="$TMP/link.json"
[[ $(cat "$TMP/victim") == precious ]] || fail "the symlink's target was written"
[[ -L "$TMP/link.json" ]] || fail "the symlink was replaced"

# somebody else's file: left alone; cufold's own earlier report: replaced
echo '{"someone": "else"}' >"$TMP/foreign.json"
run_bad "foreign file" CUFOLD_REPORT="$TMP/foreign.json"
[[ $(cat "$TMP/foreign.json") == '{"someone": "else"}' ]] || fail "a foreign file was truncated"
for i in 1 2; do
	CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/own.json" CUFOLD_TRACE="$TMP/own-trace.json" run_cufold "$TMP/out" "$prog" $((i + 1)) 4 2>"$TMP/err" ||
		fail "run $i with an existing report failed"
	[[ ! -s "$TMP/err" ]] || { cat "$TMP/err"; fail "run $i complained about its own earlier output"; }
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); json.load(open(sys.argv[2])); print(r["totals"]["windows"])' \
		"$TMP/own.json" "$TMP/own-trace.json" >"$TMP/windows.$i" || fail "run $i: output does not parse"
done
cmp -s "$TMP/windows.1" "$TMP/windows.2" && fail "the second run did not replace the first report"
note "cufold's own earlier report and trace replaced"

# a picture folder that is a file
echo data >"$TMP/notadir"
run_bad "CUFOLD_DOT is a file" CUFOLD_DOT="$TMP/notadir"
[[ $(cat "$TMP/notadir") == data ]] || fail "the file named by CUFOLD_DOT changed"

# %p: one report per process
CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/per-%p.json" run_cufold "$TMP/out" "$prog" 2 2 || fail "%p run failed"
ls "$TMP"/per-[0-9]*.json >/dev/null 2>&1 || fail "no per-process report (%p)"
note "%p names a report per process: $(basename "$TMP"/per-[0-9]*.json)"

# %p in the picture folder: expanded before the folder is made
CUFOLD_MODE=trace CUFOLD_DOT="$TMP/dots-%p" run_cufold "$TMP/out" "$prog" 2 2 2>"$TMP/err" || fail "%p dot run failed"
[[ ! -s "$TMP/err" ]] || { cat "$TMP/err"; fail "the %p picture folder was refused"; }
[[ ! -e "$TMP/dots-%p" ]] || fail "a folder named literally dots-%p was made"
ls "$TMP"/dots-[0-9]*/shape-1.dot >/dev/null 2>&1 || fail "no shape files in the per-process picture folder"
note "%p names a picture folder per process: $(basename "$TMP"/dots-[0-9]*)"

# a symlink planted where the picture folder goes: not followed, its target stays empty
mkdir "$TMP/elsewhere"
ln -s "$TMP/elsewhere" "$TMP/dotlink"
run_bad "CUFOLD_DOT is a symlink to a folder" CUFOLD_DOT="$TMP/dotlink"
[[ -z $(ls -A "$TMP/elsewhere") ]] || fail "files were written through the symlinked picture folder"
grep -q "symbolic link" "$TMP/err" || { cat "$TMP/err"; fail "the message does not say it is a symlink"; }
