#!/usr/bin/env bash
# build_deps.sh - the build's header dependencies are complete: a changed header makes exactly the
# targets that include it out of date, for cufold's objects, test programs, workloads, plugins and
# unit tests alike. Nothing is rebuilt or touched: make's -W (--what-if) pretends the header was
# just modified, and -n/-q only ask what make would do with the build dir $B. tests layer.
source "$(dirname "$0")/lib.sh"

[[ -f "$CUFOLD" && -x "$B/progs/icpt_direct" ]] || fail "not built"
# Not a sub-make of `make test`: its job server and flags are not ours.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$ROOT" BUILD="$B" "$@"; }

# stale HEADER TARGET: pretending HEADER changed makes TARGET's compile command run
stale() {
	local header=$1 target=$2
	[[ -f "$header" ]] || fail "the test itself is wrong: no $header"
	mk -n -W "$header" "$target" >"$TMP/n" 2>&1 || { cat "$TMP/n"; fail "make -n -W $header $target failed"; }
	grep -q -- "-o $target\\b" "$TMP/n" || { cat "$TMP/n"; fail "$target is not rebuilt when $header changes"; }
	note "$header -> $target rebuilt"
}

# fresh HEADER TARGET: a header TARGET does not include leaves it up to date (when it is)
fresh() {
	local header=$1 target=$2
	if ! mk -q "$target"; then
		note "$target is out of date already (the tree changed since the build): not checked against $header"
		return
	fi
	mk -q -W "$header" "$target" || fail "$target is rebuilt when $header changes, which it does not include"
	note "$header -/-> $target"
}

stale common/log.h "$B/obj/capture/record.o"
stale driver/real.h "$B/obj/replay/launch.o"
stale rewrite/rewriter.h "$B/obj/rewrite/rules/copy_chain.o"
stale tests/progs/icpt_work.h "$B/progs/icpt_direct"
stale tests/progs/icpt_check.h "$B/progs/icpt_procaddr"
stale tests/simcuda/sim_twin.h "$B/plugins/extra_twins.so"
stale tests/simcuda/sim_twin.h "$B/unit/sim_twins"
stale tests/workloads/wl.h "$B/workloads/recsys"
stale tests/unit/rw_test.h "$B/unit/test_rewrite_copy_chain"
stale driver/cuda_api.def "$B/libcufold.so"

fresh tests/progs/icpt_work.h "$B/progs/rpl_loop"
fresh tests/simcuda/sim_twin.h "$B/unit/test_rewrite_copy_chain"
fresh replay/replay_int.h "$B/obj/capture/record.o"

# Every binary the build compiles from C in one step wrote its dependency file (-MMD), so no
# program, workload, plugin or unit test can miss a header.
missing=()
for bin in "$B"/progs/* "$B"/workloads/* "$B"/plugins/*.so "$B"/unit/*; do
	[[ -f "$bin" && -x "$bin" && "$bin" != *.d ]] || continue
	[[ -f "${bin%.so}.d" ]] || missing+=("$bin")
done
((${#missing[@]} == 0)) || fail "built without a dependency file (-MMD): ${missing[*]}"
note "every program, workload, plugin and unit test has its .d file"
