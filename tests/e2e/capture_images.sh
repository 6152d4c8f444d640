#!/usr/bin/env bash
# capture_images.sh - capture keeps the PTX of what a program loads, by every loader
# (tests/progs/cap_images: cuModuleLoad of a PTX file, cuModuleLoadData of PTX text,
# cuModuleLoadDataEx of an LZ4 fatbin, cuModuleLoadFatBinary of a wrapper around a zstd fatbin,
# cuLibraryLoadData launched through a CUkernel, cuLibraryLoadFromFile through
# cuKernelGetFunction, the library's module, two JIT links' outputs, machine code only): the report's kernel_code says "ptx" for every kernel
# loaded with PTX and "machine_code" for the one without (a JIT link's PTX is its inputs: on a
# GPU its output is machine code; test_capture_images checks that case); one copy per distinct text (three),
# and a module unloaded and never launched is not kept; `cufold report` says so. The CUDA
# runtime's registration (nvcc-built programs, shared and static cudart) arrives through the
# same loaders: its kernels have their PTX too. Output identical with and without cufold, in
# trace and replay modes. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/cap_images"
[[ -x "$prog" && -f "$CUFOLD" ]] || fail "$prog or $CUFOLD not built"
export SIMCUDA_MACHINE_CODE=noop  # the machine-code-only module loads and runs as a no-op
SEEDS=4 same_output_over_seeds "$prog" 4
SEEDS=2 same_output_over_seeds "$prog" 4 unload

report() { # name mode args...: run under cufold, report to $TMP/name.json
	local name=$1 mode=$2; shift 2
	CUFOLD_MODE=$mode CUFOLD_REPORT="$TMP/$name.json" run_cufold "$TMP/$name.out" "$prog" "$@" 2>"$TMP/$name.err" ||
		fail "cap_images $* failed with cufold: $(tail -3 "$TMP/$name.err")"
}
report keep trace 4
report unload trace 4 unload
report replay replay 6
python3 - "$TMP/keep.json" "$TMP/unload.json" "$TMP/replay.json" <<'PY' || fail "the report does not say what the images hold"
import json, sys
keep, unload, replay = (json.load(open(p)) for p in sys.argv[1:])
want = {"fill": "ptx", "scale": "ptx", "relu": "ptx", "add": "ptx", "axpy": "ptx", "tanh_kernel": "ptx",
        "mul": "ptx", "copy": "ptx", "mc_none": "machine_code"}
for name, r in (("keep", keep), ("unload", unload), ("replay", replay)):
    if r.get("kernel_code") != want:
        sys.exit("%s: kernel_code %s, want %s" % (name, r.get("kernel_code"), want))
    t = r["totals"]
    got = (t["images_loaded"], t["images_ptx"], t["images_machine_code"], t["images_no_code"])
    if got != (10, 9, 1, 0):
        sys.exit("%s: images loaded/ptx/machine code/none %s, want (10, 9, 1, 0)" % (name, got))
# the PTX file, the same text as data and the two JIT links of it are one copy, the LZ4, uncompressed and compressed-all
# fatbins' compute_90 PTX another, the default fatbin's compute_75 PTX a third, linalg's a fourth
if keep["totals"]["ptx_texts_kept"] != 4:
    sys.exit("keep: %d distinct texts kept, want 4" % keep["totals"]["ptx_texts_kept"])
# unloaded: linalg's text (never launched) goes; the launched kernels' records keep theirs
if unload["totals"]["ptx_texts_kept"] != 3 or unload["totals"]["ptx_bytes_kept"] >= keep["totals"]["ptx_bytes_kept"]:
    sys.exit("unload: %d texts, %d bytes kept (keep: %d bytes)" % (unload["totals"]["ptx_texts_kept"],
             unload["totals"]["ptx_bytes_kept"], keep["totals"]["ptx_bytes_kept"]))
print("-- every loader's kernels have their PTX; %d texts, %d bytes kept"
      % (keep["totals"]["ptx_texts_kept"], keep["totals"]["ptx_bytes_kept"]))
PY
note "capture keeps each loaded image's PTX once and says what each kernel has"

"$ROOT/scripts/cufold" report "$TMP/keep.json" >"$TMP/keep.txt" || fail "cufold report failed"
grep -q "images loaded        10: 9 with PTX, 1 machine code only, 0 neither; 4 PTX texts kept" "$TMP/keep.txt" ||
	fail "cufold report does not count the images: $(grep images "$TMP/keep.txt")"
note "cufold report counts the images"

# --- the runtime's own registration
unset SIMCUDA_MACHINE_CODE
for kind in shared static; do
	rt="$B/cudart/train-$kind"
	[[ -x "$rt" ]] || fail "$rt not built"
	CUFOLD_MODE=trace CUFOLD_REPORT="$TMP/rt-$kind.json" run_cufold "$TMP/rt-$kind.out" "$rt" 2>"$TMP/rt-$kind.err" ||
		fail "$rt failed with cufold: $(tail -3 "$TMP/rt-$kind.err")"
	python3 - "$TMP/rt-$kind.json" <<'PY' || fail "$kind cudart: its registered image's PTX was not found"
import json, sys
r = json.load(open(sys.argv[1]))
code, t = r.get("kernel_code", {}), r["totals"]
if not code or set(code.values()) != {"ptx"} or t["images_ptx"] < 1:
    sys.exit("kernel_code %s, images with PTX %d" % (code, t["images_ptx"]))
print("-- %d kernels registered by the runtime, all with PTX" % len(code))
PY
done
note "the runtime's registered fatbins have their PTX found"
