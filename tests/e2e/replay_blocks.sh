# replay_blocks.sh - buddy blocks (replay/launch.c rpl__segment_end, template.c blocks_make): a
# segment that ends while the device is busy stays deferred and launches later with the next ones
# as one block graph; one that ends with the device idle launches at once. Results bit for bit the
# same as without cufold over many seeds, either way; both ways seen in the report; and a
# host-bound loop of copies and memsets (copy_loop, 158 ops a step) goes to the driver in at most
# 4 graph launches a step, at least 20x fewer host submissions than eager (one launch per segment,
# the policy before blocks: 12 a step, 13.2x); recsys, whose lookup stream makes a segment cut,
# in at most 8 host submissions a step at CUFOLD_OPT=0, 1 and 2 (blocks aligned again from that
# cut, greedy blocks of as many segments as fit, idle ends held when the next segment is due
# sooner than a launch costs, blocks over reordered spans that are not wide); dataparallel, whose allocator frees
# what a step two back used, keeps its template (no FREE retirement) in at most 8. tests layer.
source "$(dirname "$0")/lib.sh"
export CUFOLD_MODE=replay CUFOLD_OPT=0 CUFOLD_GATE=0 # the launches alone, whatever the gate decides
loop=$B/progs/rpl_loop
copy=$B/progs/copy_loop
[[ -x $loop && -x $copy ]] || fail "rpl_loop or copy_loop is not built"

# ---- (1) the same bits, with the device busy (program host time 0, kernels +20 us: blocks go)
# and idle (50 us of program host time a call: every segment launches alone), moving pointers too
SIMCUDA_KERNEL_NS=20000 same_output_over_seeds "$loop" train 10
APP_US=50 same_output_over_seeds "$loop" train 8
same_output_over_seeds "$copy" fixed 10
same_output_over_seeds "$copy" move 10
CUFOLD_OPT=1 same_output_over_seeds "$copy" move 10
APP_US=3 SIMCUDA_KERNEL_NS=20000 CUFOLD_OPT=1 same_output_over_seeds "$loop" train 10

# ---- (2) both ways, as the report counts them
SIMCUDA_KERNEL_NS=20000 CUFOLD_REPORT=$TMP/busy.json run_cufold /dev/null "$loop" train 16 || fail "busy run exited $?"
APP_US=50 CUFOLD_REPORT=$TMP/idle.json run_cufold /dev/null "$loop" train 16 || fail "idle run exited $?"
python3 - "$TMP" <<'PY' || fail "blocks do not launch as the device's state says"
import json, os, sys
d = sys.argv[1]
def tpl(n):
    return json.load(open(os.path.join(d, n + ".json")))["replay"]["templates"][0]
def want(what, cond, t):
    if not cond:
        sys.exit("%s: %s" % (what, {k: t[k] for k in ("segments", "blocks", "launches", "block_launches",
                                                      "boundaries_idle", "boundaries_busy", "windows_replayed")}))
busy, idle = tpl("busy"), tpl("idle")
for t in (busy, idle):
    # buddy blocks 1-4, 1-2, 3-4, 5-6; greedy blocks 1-6 (the whole run after its first segment)
    # and, within the node budget, 2-6 and 3-6
    want("7 segments, 7 blocks", (t["segments"], t["blocks"]) == (7, 7), t)
    want("13 windows replayed", t["windows_replayed"] == 13, t)
w = busy["windows_replayed"]
# busy: the first segment alone (the device has nothing yet), then one block of the rest (the
# buddy blocks alone: 1-4 and 5-6, then 6 alone, 3 launches)
want("device busy: segment ends kept deferred", busy["boundaries_busy"] >= 5 * w, busy)
want("device busy: 2 launches a window, 1 of them a block",
     busy["launches"] == 2 * w and busy["block_launches"] == w, busy)
# idle: each segment at its end, as before blocks
# (blocks start at segments 1, 2, 3 and 5: a block could go past each one's end)
want("device idle: every segment end a block could go past found it idle", idle["boundaries_idle"] == 4 * w and idle["boundaries_busy"] == 0, idle)
want("device idle: one launch per segment, no block", idle["launches"] == 7 * w and idle["block_launches"] == 0, idle)
print("-- busy: %d launches a window (%d blocks); idle: %d (no block)" %
      (busy["launches"] // w, busy["block_launches"] // w, idle["launches"] // w))
PY
note "busy device: few big launches; idle device: a launch per segment"

# ---- (3) host-bound copy loop: submissions per step, eager against cufold
count_steps cp plain "$copy" fixed @STEPS@
count_steps cc cufold "$copy" fixed @STEPS@
cmp -s "$TMP/cp.16.out" "$TMP/cc.16.out" || fail "copy_loop: output differs with cufold"
eager=$(per_step cp host_submissions)
subs=$(per_step cc host_submissions)
launches=$(per_step cc graph_launches)
note "copy_loop fixed (CUFOLD_OPT=0): $eager host submissions a step eager, $subs with cufold ($launches graph launches)"
python3 -c "import sys; e, s, l = map(float, sys.argv[1:]); sys.exit(0 if l <= 4 and e >= 20 * s else 1)" \
	"$eager" "$subs" "$launches" || fail "copy_loop: want at most 4 graph launches a step and at least 20x fewer submissions than eager"
note "copy_loop: at least 20x fewer host submissions than eager"

# ---- (4) blocks aligned again from a segment cut that keeps streams apart: recsys (host-bound,
# CUFOLD_OPT=1) has one such cut (its lookup stream), and blocks aligned past it paired nothing
# after it: 10 graph launches a step (11 host submissions); aligned from it, 8 (9). And a run
# found idle at a segment end waits for the next segment when that came last time within what a
# launch costs (launch.c: hold_idle): its small 2nd and 3rd segments, which found the device idle
# and launched alone (9 host submissions a step), now join the block after them: at most 8
rs=$B/workloads/recsys
[[ -x $rs ]] || fail "$rs is not built"
count_steps rp plain "$rs" --steps @STEPS@
CUFOLD_OPT=1 CUFOLD_CARDS=tests/kernels/test-kernels.cards count_steps rc cufold "$rs" --steps @STEPS@
cmp -s "$TMP/rp.16.out" "$TMP/rc.16.out" || fail "recsys: output differs with cufold"
subs=$(per_step rc host_submissions)
note "recsys (CUFOLD_OPT=1): $(per_step rp host_submissions) host submissions a step eager, $subs with cufold ($(per_step rc graph_launches) graph launches)"
python3 - "$TMP/rc.16.report" "$subs" <<'PY' || fail "recsys (CUFOLD_OPT=1): want at most 8 host submissions a step, some idle segment ends held"
import json, sys
t = json.load(open(sys.argv[1]))["replay"]["templates"][0]
print("-- boundaries: idle %d, busy %d, held %d, starved %d" %
      (t["boundaries_idle"], t["boundaries_busy"], t["boundaries_held"], t["boundaries_starved"]))
sys.exit(0 if float(sys.argv[2]) <= 8 and t["boundaries_held"] > 0 else 1)
PY

# ---- (5) greedy blocks: at CUFOLD_OPT=0 recsys's run before its stream cut is 8 segments of
# 914 ops, its run after it 5; the buddy blocks alone took 10 graph launches a step (11 host
# submissions), [1..7] and [9..13] as greedy blocks take 7 (8): at most 8 submissions a step
CUFOLD_OPT=0 CUFOLD_CARDS=tests/kernels/test-kernels.cards count_steps r0 cufold "$rs" --steps @STEPS@
cmp -s "$TMP/rp.16.out" "$TMP/r0.16.out" || fail "recsys (CUFOLD_OPT=0): output differs with cufold"
subs=$(per_step r0 host_submissions)
note "recsys (CUFOLD_OPT=0): $subs host submissions a step with cufold ($(per_step r0 graph_launches) graph launches)"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 8 else 1)" "$subs" ||
	fail "recsys (CUFOLD_OPT=0): want at most 8 host submissions a step (greedy blocks)"

# ---- (5b) CUFOLD_OPT=2: recsys's last 4 segments lie in spans the parallel rule reorders, whose
# blocks were all dropped (14 host submissions a step); a reordered block is dropped now only where
# it is wide (template.c: block_wide; recsys's have 3 to 12 plan nodes): at most 8, the same bits
CUFOLD_OPT=2 CUFOLD_CARDS=tests/kernels/test-kernels.cards count_steps r2 cufold "$rs" --steps @STEPS@
cmp -s "$TMP/rp.16.out" "$TMP/r2.16.out" || fail "recsys (CUFOLD_OPT=2): output differs with cufold"
subs=$(per_step r2 host_submissions)
note "recsys (CUFOLD_OPT=2): $subs host submissions a step with cufold ($(per_step r2 graph_launches) graph launches)"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 8 else 1)" "$subs" ||
	fail "recsys (CUFOLD_OPT=2): want at most 8 host submissions a step (blocks over reordered spans)"
CUFOLD_OPT=2 CUFOLD_CARDS=tests/kernels/test-kernels.cards SEEDS=8 same_output_over_seeds "$rs" --steps 8
CUFOLD_OPT=2 CUFOLD_CARDS=tests/kernels/test-kernels.cards SIMCUDA_KERNEL_NS=20000 SEEDS=4 \
	same_output_over_seeds "$rs" --steps 8

# ---- (6) dataparallel (CUFOLD_OPT=1): its churn check's probe sends a segment eagerly once; the
# segment's graph then names buffers of an older step, which the allocator frees two steps on.
# Counted as the template's, that retired it by FREE twice (47 host submissions a step with the
# greedy blocks); it is no graph's binding now (went_eager): at most 8 a step, nothing retired
dp=$B/workloads/dataparallel
[[ -x $dp ]] || fail "$dp is not built"
count_steps dpp plain "$dp" --steps @STEPS@
CUFOLD_OPT=1 CUFOLD_CARDS=tests/kernels/test-kernels.cards count_steps dpc cufold "$dp" --steps @STEPS@
cmp -s "$TMP/dpp.16.out" "$TMP/dpc.16.out" || fail "dataparallel: output differs with cufold"
subs=$(per_step dpc host_submissions)
note "dataparallel (CUFOLD_OPT=1): $(per_step dpp host_submissions) host submissions a step eager, $subs with cufold"
python3 - "$TMP/dpc.16.report" "$subs" <<'PY' || fail "dataparallel: want its template kept (no FREE retirement) and at most 8 submissions a step"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
print("-- retired:", r["retired"], "fallbacks:", r["fallbacks"])
sys.exit(0 if r["retired"] == 0 and "FREE" not in r["fallbacks"] and float(sys.argv[2]) <= 8 else 1)
PY
