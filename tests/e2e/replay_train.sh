# replay_train.sh - CUFOLD_MODE=replay on training-loop programs: results bit for bit the same as
# without cufold over 20 seeds, and the software device's own counters show the replayed steps
# going to the driver as at most one graph launch per segment (host submissions per step drop
# from one per op to one per launch, plus the loss copy the host waits for; segments that end
# while the device is busy launch together as buddy blocks, launch.c), segments cut small at the
# window's start and end as replay/template.c documents. tests layer.
source "$(dirname "$0")/lib.sh"
gate_off_under_tsan
prog=$B/progs/rpl_loop
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay CUFOLD_OPT=0

same_output_over_seeds "$B/progs/sample_train" 8 16
same_output_over_seeds "$prog" train 10
CUFOLD_SEGMENT=8 same_output_over_seeds "$prog" train 8

# stats: a run of S1 and one of S2 steps; the difference is (S2 - S1) steady-state steps
stats() { # out-file segment steps [preload]
	local out=$1 seg=$2 steps=$3 pre=${4:-}
	if [[ -n $pre ]]; then
		CUFOLD_SEGMENT=$seg SIMCUDA_STATS=$out CUFOLD_REPORT=$out.report run_cufold /dev/null "$prog" train "$steps" ||
			fail "rpl_loop train $steps exited $?"
	else
		SIMCUDA_STATS=$out run_plain /dev/null "$prog" train "$steps" || fail "rpl_loop train $steps exited $?"
	fi
}
stats "$TMP/p6" 512 6; stats "$TMP/p16" 512 16
stats "$TMP/c6" 512 6 1; stats "$TMP/c16" 512 16 1
stats "$TMP/s6" 8 6 1; stats "$TMP/s16" 8 16 1
python3 - "$TMP" <<'PY' || fail "the device's counters do not show one graph launch per segment"
import json, sys, os
d = sys.argv[1]
def load(n): return json.load(open(os.path.join(d, n)))["totals"]
def per_step(a, b, key): return (load(b)[key] - load(a)[key]) / 10.0
def seg_sizes(g, most, first=4):
    # replay/template.c segment_size: grow from 4 (as many as came before), at most half of what
    # is left, at most CUFOLD_SEGMENT
    sizes, p = [], 0
    while p < g:
        grow, shrink = max(first, p), max(first, (g - p + 1) // 2)
        n = min(grow, shrink, most, g - p)
        sizes.append(n)
        p += n
    return sizes
def report_sizes(n):
    t = json.load(open(os.path.join(d, n + ".report")))["replay"]["templates"][0]
    return [s["ops"] for s in t["segment_launches"]]
def report_launches(n):  # graph launches per replayed window (segments and blocks)
    t = json.load(open(os.path.join(d, n + ".report")))["replay"]["templates"][0]
    return t["launches"] / float(t["windows_replayed"])
ops = 45  # graphable ops of one train step: 2 memsets-ish + kernels + a copy (see rpl_loop.c)
plain = per_step("p6", "p16", "host_submissions")
full = per_step("c6", "c16", "host_submissions")
seg16 = per_step("s6", "s16", "host_submissions")
launches = per_step("c6", "c16", "graph_launches")
launches16 = per_step("s6", "s16", "graph_launches")
sizes, sizes16 = seg_sizes(ops, 512), seg_sizes(ops, 8)
print("segments: %s; with CUFOLD_SEGMENT=8: %s" % (sizes, sizes16))
print("host submissions per step: plain %.1f, replay %.1f, replay %.1f (CUFOLD_SEGMENT=8)" % (plain, full, seg16))
print("graph launches per step: %.1f, %.1f (CUFOLD_SEGMENT=8)" % (launches, launches16))
def want(what, got, exp):
    if abs(got - exp) > 1e-9 if isinstance(exp, float) or isinstance(exp, int) else got != exp:
        sys.exit("%s: got %s, expected %s" % (what, got, exp))
# the device gets work after 4 calls, and the last segment is short
want("segments as replay cut them", report_sizes("c16"), sizes)
want("segments as replay cut them (CUFOLD_SEGMENT=8)", report_sizes("s16"), sizes16)
want("the first segment", sizes[0], 4)
want("plain submissions per step", plain, ops + 1)
per_win, per_win16 = report_launches("c16"), report_launches("s16")
want("graph launches per step, as the report counts them", launches, per_win)
want("at most one graph launch per segment", launches <= len(sizes), True)
want("submissions per step with replay", full, launches + 1)       # the graphs, the loss copy
want("graph launches per step (CUFOLD_SEGMENT=8)", launches16, per_win16)
want("at most one graph launch per segment (CUFOLD_SEGMENT=8)", launches16 <= len(sizes16), True)
want("submissions per step (CUFOLD_SEGMENT=8)", seg16, launches16 + 1)
# every step after warm-up replays: 16 steps, the template is built when step 2 closes
want("graph launches in 16 steps", load("c16")["graph_launches"], (16 - 3) * per_win)
PY
note "at most one graph launch per segment per replayed step"

# sample_train copies its input from pageable memory each step: the copy is staged at the call
# and goes in the graph too (one graph launch, the event that frees its stage buffer, the loss)
for n in 6 16; do
	SIMCUDA_STATS=$TMP/tp$n run_plain /dev/null "$B/progs/sample_train" $n 16 || fail "sample_train exited $?"
	SIMCUDA_STATS=$TMP/tc$n CUFOLD_REPORT=$TMP/tc$n.report run_cufold /dev/null "$B/progs/sample_train" $n 16 ||
		fail "sample_train exited $? with cufold"
done
python3 - "$TMP" <<'PY' || fail "sample_train does not replay as at most one graph launch per segment"
import json, os, sys
d = sys.argv[1]
def t(n): return json.load(open(os.path.join(d, n)))["totals"]
def step(k, a, b): return (t(b)[k] - t(a)[k]) / 10.0
plain, rep = step("host_submissions", "tp6", "tp16"), step("host_submissions", "tc6", "tc16")
launches = step("graph_launches", "tc6", "tc16")
segs = json.load(open(os.path.join(d, "tc16.report")))["replay"]["templates"][0]["segments"]
print("sample_train host submissions per step: %.1f without cufold, %.1f with (%.1f graph launches, %d segments)" %
      (plain, rep, launches, segs))
if launches > segs or plain != 85 or rep != launches + 2:
    sys.exit("expected 85 -> %d submissions per step, at most %d graph launches" % (launches + 2, segs))
PY

# The modeled time the small first segments claim (software device's model, the program's own
# host time APP_US before every enqueue): with 10 us of program host time per op and kernels of
# +20 us, the device gets work after the fourth call of each step, so replay (gate off, to see
# the segments alone) stays within 3 % of eager (0.99); one segment of 45 ops leaves the device
# idle while the host issues all of them (measured with RPL_SEG_FIRST 512: 0.70). With no extra
# kernel time the step is host-bound and replay is faster (1.18).
ratio() { # app_us kernel_ns -> eager/cufold modeled host time of rpl_loop train 30
	APP_US=$1 SIMCUDA_KERNEL_NS=$2 SIMCUDA_STATS=$TMP/re.json run_plain "$TMP/re.out" "$prog" train 30 || fail "eager exited $?"
	APP_US=$1 SIMCUDA_KERNEL_NS=$2 SIMCUDA_STATS=$TMP/rc.json CUFOLD_GATE=0 run_cufold "$TMP/rc.out" "$prog" train 30 ||
		fail "cufold exited $?"
	cmp -s "$TMP/re.out" "$TMP/rc.out" || fail "APP_US=$1 SIMCUDA_KERNEL_NS=$2: output differs with cufold"
	python3 -c "import json; m=lambda p: json.load(open(p))['modeled']['host_ns']; print('%.3f' % (m('$TMP/re.json') / m('$TMP/rc.json')))"
}
r1=$(ratio 10 20000); r2=$(ratio 10 0)
note "modeled eager/cufold with 10 us of program host time per op: $r1 (+20 us kernels), $r2 (no extra)"
python3 -c "import sys; sys.exit(0 if $r1 >= 0.97 and $r2 >= 1.1 else 1)" || fail "segments do not keep the device fed: $r1, $r2"
