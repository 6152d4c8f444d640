#!/usr/bin/env bash
# twin_plugin.sh - a program brings its own kernel twin through SIMCUDA_TWINS: with the example
# plugin the kernel runs and computes the right values; without it the device's PTX interpreter
# runs the kernel instead, with the same values and without a message. tests layer.
source "$(dirname "$0")/lib.sh"

prog="$B/progs/twin_plugin"
plugin="$ROOT/$B/plugins/extra_twins.so"
[[ -x "$prog" ]] || fail "$prog not built"
[[ -f "$plugin" ]] || fail "$plugin not built"

note "without the plugin: interpreted"
awk 'BEGIN { for (i = 0; i < 16; i++) { x = i / 2 - 3; printf "%.6g\n", x * x } }' >"$TMP/want"
env -u SIMCUDA_TWINS -u LD_PRELOAD "$prog" >"$TMP/none.out" 2>"$TMP/none.err" ||
	{ cat "$TMP/none.err"; fail "failed without the plugin (the interpreter runs the kernel)"; }
diff "$TMP/want" "$TMP/none.out" || fail "wrong values from the interpreter"
[[ ! -s "$TMP/none.err" ]] || { cat "$TMP/none.err"; fail "unexpected messages without the plugin"; }

note "with the plugin"
SIMCUDA_TWINS="$plugin" env -u LD_PRELOAD "$prog" >"$TMP/plugin.out" 2>"$TMP/plugin.err" ||
	{ cat "$TMP/plugin.err"; fail "failed with SIMCUDA_TWINS=$plugin"; }
diff "$TMP/want" "$TMP/plugin.out" || fail "wrong values from the plugin's twin"
[[ ! -s "$TMP/plugin.err" ]] || { cat "$TMP/plugin.err"; fail "unexpected messages with the plugin"; }

note "a bad path before the plugin is reported and skipped"
SIMCUDA_TWINS="/nonexistent/x.so:$plugin" env -u LD_PRELOAD "$prog" >"$TMP/both.out" 2>"$TMP/both.err" ||
	fail "failed with a bad path in SIMCUDA_TWINS"
diff "$TMP/want" "$TMP/both.out" || fail "wrong values with a bad path first"
[[ $(grep -c '/nonexistent/x.so' "$TMP/both.err") == 1 ]] || fail "the bad path was not reported once"
note ok
