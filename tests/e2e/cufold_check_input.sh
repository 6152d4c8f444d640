#!/usr/bin/env bash
# cufold_check_input.sh - `cufold check` with CUFOLD_LIBCUDA naming what is not a driver: a
# FIFO, a directory, a device (one line, exit 1, no hang: nothing is opened before stat says it
# is a regular file), a text file, libc.so.6 ("not a CUDA driver", no traceback) and
# libcufold.so itself, by path, through a link and as a copy ("that is cufold, not the driver");
# the version on its first line, and the library's on the preload line. tests layer.
source "$(dirname "$0")/lib.sh"

CMD="$ROOT/scripts/cufold"
export CUFOLD_LIB="$CUFOLD"

"$CMD" check >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "check fails on the software device"; }
[[ $(head -1 "$TMP/out") =~ ^cufold:\ +$(cat VERSION)$ ]] || { head -1 "$TMP/out"; fail "check does not print the version first"; }
note "check: $(head -1 "$TMP/out" | tr -s ' ')"
# the library's own version, from its first log line (a library that logs none: not shown)
if CUFOLD_LOG=info CUFOLD_MODE=trace LD_PRELOAD="$CUFOLD" "$B/progs/rpl_loop" train 1 2>&1 >/dev/null | grep -q 'cufold [0-9]'; then
	grep -q "^preload: *works (a child process loaded it; library $(cat VERSION))" "$TMP/out" ||
		{ cat "$TMP/out"; fail "check does not show the library's version"; }
	note "$(grep '^preload:' "$TMP/out" | tr -s ' ')"
else
	note "SKIP the library's version in check: this libcufold.so does not log one"
fi

mkfifo "$TMP/fifo.so"
ln -s "$CUFOLD" "$TMP/link.so"
cp "$CUFOLD" "$TMP/copy.so"
echo "not a library" >"$TMP/text.so"
# VALUE and what the driver line must say
while read -r v want; do
	CUFOLD_LIBCUDA=$v timeout 20 "$CMD" check >"$TMP/out" 2>&1; rc=$?
	[[ $rc == 124 ]] && fail "CUFOLD_LIBCUDA=$v: check hangs"
	grep -q Traceback "$TMP/out" && { cat "$TMP/out"; fail "CUFOLD_LIBCUDA=$v: a traceback"; }
	[[ $rc == 1 ]] || { cat "$TMP/out"; fail "CUFOLD_LIBCUDA=$v: exit $rc, not 1"; }
	line=$(grep '^driver:' "$TMP/out")
	[[ $(grep -c '^driver:' "$TMP/out") == 1 && $line == *"$want"* ]] ||
		{ cat "$TMP/out"; fail "CUFOLD_LIBCUDA=$v: the driver line does not say '$want'"; }
	grep -Eq '^(version|devices):' "$TMP/out" && fail "CUFOLD_LIBCUDA=$v: check went on to use it"
	note "CUFOLD_LIBCUDA=$v: $line"
done <<LIST
$TMP/fifo.so a FIFO
$TMP a directory
/dev/null a character device
$TMP/text.so not an ELF file
libc.so.6 not a CUDA driver
$CUFOLD that is cufold
$TMP/link.so that is cufold
$TMP/copy.so that is cufold
$TMP/none.so No such file
LIST
