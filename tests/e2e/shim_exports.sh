#!/usr/bin/env bash
# shim_exports.sh - preloading cufold changes nothing but the driver API: libcufold.so exports
# exactly the driver entry points of driver/cuda_api.def plus dlsym, needs only glibc's libraries
# (never libunwind, whose _Unwind_* would replace libgcc_s's unwinder for the whole process), and
# a C program that dlopens a C++ library throwing inside std::call_once runs as without cufold
# in every mode, call sites on included; call sites still name the program's frames. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cxx_once"
lib="$ROOT/$B/plugins/cxx_once.so"
[[ -x "$prog" && -f "$lib" && -f "$CUFOLD" ]] || fail "not built"

# (b) the dynamic symbols: the version script's names, nothing more, nothing less
sed -n 's/^CF_API(\([A-Za-z0-9_]*\),.*/\1/p; s/^CF_API_UNTYPED(\([A-Za-z0-9_]*\)).*/\1/p' driver/cuda_api.def |
	{ cat; echo dlsym; } | LC_ALL=C sort -u >"$TMP/want"
nm -D --defined-only "$CUFOLD" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | LC_ALL=C sort -u >"$TMP/have" ||
	fail "nm -D failed on $CUFOLD"
[[ $(wc -l <"$TMP/want") -gt 100 ]] || fail "the test itself is wrong: too few names in driver/cuda_api.def"
extra=$(LC_ALL=C comm -13 "$TMP/want" "$TMP/have")
missing=$(LC_ALL=C comm -23 "$TMP/want" "$TMP/have")
[[ -z "$extra" ]] || fail "libcufold.so exports names that are not driver entry points or dlsym:" $extra
[[ -z "$missing" ]] || fail "libcufold.so does not export:" $missing
note "exports: the $(wc -l <"$TMP/want") names of cuda_api.def and dlsym, nothing else"

# (c) what it links: glibc's libraries only
needed=$(readelf -d "$CUFOLD" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[[ -n "$needed" ]] || fail "readelf -d found no NEEDED entries in $CUFOLD"
for n in $needed; do
	case $n in
	libc.so.6 | libdl.so.2 | libpthread.so.0 | ld-linux-x86-64.so.2) ;;
	# a sanitizer build (SAN=...) links its runtime; release builds never do
	libasan.so.* | libubsan.so.* | libtsan.so.* | libm.so.6 | libgcc_s.so.1 | libstdc++.so.6) [[ -n ${SAN:-} ]] ||
		fail "libcufold.so needs $n (allowed: libc, libdl, libpthread, ld-linux)" ;;
	*) fail "libcufold.so needs $n (allowed: libc, libdl, libpthread, ld-linux)" ;;
	esac
done
note "needs:" $needed
if [[ -n ${SAN:-} ]]; then
	# ASan's __cxa_throw interceptor cannot find libstdc++'s from a C executable: the program
	# aborts without cufold too; the exception checks are for release and debug builds
	note "SAN=$SAN: the exception checks need a build without a sanitizer runtime; skipped"
	exit 0
fi

# (a) the C program must not bring libgcc_s itself, or the test proves nothing
if readelf -d "$prog" | grep -q 'NEEDED.*libgcc_s'; then
	fail "the test itself is wrong: $prog links libgcc_s"
fi
run_plain "$TMP/plain" "$prog" "$lib" || fail "$prog exited $? without cufold"
grep -q '^caught 0$' "$TMP/plain" && grep -q '^done$' "$TMP/plain" || fail "the test itself is wrong: no exception caught"
check() { # label, env...
	local label=$1 rc
	shift
	env "$@" LD_PRELOAD="$CUFOLD" "$prog" "$lib" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	((rc == 0)) || { cat "$TMP/err"; fail "$label: exited $rc with cufold$( ((rc > 128)) && echo " (signal $((rc - 128)))")"; }
	cmp -s "$TMP/plain" "$TMP/out" || { diff "$TMP/plain" "$TMP/out" | head; fail "$label: output differs with cufold"; }
	! grep -q 'call sites are off' "$TMP/err" || { cat "$TMP/err"; fail "$label: call sites turned off"; }
	note "$label: exceptions inside std::call_once caught, output identical"
}
check off CUFOLD_MODE=off
check trace CUFOLD_MODE=trace
check replay CUFOLD_MODE=replay
check "replay, call sites" CUFOLD_MODE=replay CUFOLD_CALLSITES=1 CUFOLD_REPORT="$TMP/cs.json"

# libunwind is loaded, privately by cufold, only when call sites are asked for
loads_unwind() { # env...: 0 when the run's dynamic loader loaded libunwind
	env "$@" LD_DEBUG=files LD_PRELOAD="$CUFOLD" "$prog" "$lib" 2>"$TMP/ld" >/dev/null || fail "$*: exited $? with cufold"
	grep -q 'file=libunwind\.so\.8 .*dynamically loaded by .*libcufold\.so' "$TMP/ld"
}
! loads_unwind CUFOLD_MODE=trace || fail "libunwind loaded without CUFOLD_CALLSITES=1"
loads_unwind CUFOLD_MODE=trace CUFOLD_CALLSITES=1 || fail "CUFOLD_CALLSITES=1 did not make cufold load libunwind"
note "libunwind dlopen'ed by cufold with call sites only"

# (d) call sites still name the program's frames (libunwind loaded privately, on demand)
python3 - "$TMP/cs.json" <<'PY' || fail "call sites wrong"
import json, sys
r = json.load(open(sys.argv[1]))
sites = r["call_sites"]
if not r["cufold_report"]["callsites"]:
    sys.exit("the report says call sites were off")
if not sites or not all("main+0x" in s["site"] for s in sites):
    sys.exit("call sites without the program's frames: %s" % sites[:3])
print("-- %d call sites, e.g. %s" % (len(sites), sites[0]["site"]))
PY
