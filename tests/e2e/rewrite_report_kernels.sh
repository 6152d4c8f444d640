# rewrite_report_kernels.sh - the report's rewrite.kernels counts what the device runs: each
# segment's and block's plan weighed by its launches (replay/report.c, kernels_launched), not the
# segments' plans alone. rpl_loop with the device busy (blocks launch) at CUFOLD_SEGMENT=8 and 10;
# at 10 the block of its last two segments fuses one launch more than they do apart (32 kernels
# a step where the segments' plans say 33). Compared with the software device's count of
# kernels executed per steady step (a 20-step run minus a 10-step one). tests layer.
source "$(dirname "$0")/lib.sh"
export CUFOLD_MODE=replay CUFOLD_OPT=1 CUFOLD_GATE=0 SIMCUDA_KERNEL_NS=20000
loop=$B/progs/rpl_loop
[[ -x $loop ]] || fail "rpl_loop is not built"

for seg in 8 10; do
	for n in 10 20; do
		CUFOLD_SEGMENT=$seg SIMCUDA_STATS=$TMP/s$seg.$n CUFOLD_REPORT=$TMP/r$seg.$n \
			run_cufold /dev/null "$loop" train $n || fail "rpl_loop ($seg, $n steps) exited $?"
	done
done
python3 - "$TMP" <<'PY' || fail "the report's kernels are not what the device ran"
import json, os, sys
d = sys.argv[1]
def load(n):
    return json.load(open(os.path.join(d, n)))
differs = False
for seg in (8, 10):
    ran = (load("s%d.20" % seg)["totals"]["kernels_executed"] - load("s%d.10" % seg)["totals"]["kernels_executed"]) / 10
    t = load("r%d.20" % seg)["replay"]["templates"][0]
    said, planned = t["rewrite"]["kernels"][1], sum(s["kernels"] for s in t["segment_launches"])
    blocks = [b for b in t["block_launches_by_block"] if b["launches"]]
    print("-- CUFOLD_SEGMENT=%d: %g kernels a step run, the report says %d (the segments' plans %d; blocks launched %s)"
          % (seg, ran, said, planned, [(b["segments"], b["launches"], b["kernels"]) for b in blocks]))
    if not blocks or t["windows_replayed"] < 15:
        sys.exit("CUFOLD_SEGMENT=%d: no block launched, or too few windows replayed" % seg)
    if said != ran:
        sys.exit("CUFOLD_SEGMENT=%d: the report says %d kernels a window, the device ran %g a step" % (seg, said, ran))
    differs |= planned != ran
if not differs:
    sys.exit("no case where a block's plan runs other kernels than its segments': the test shows nothing")
PY
note "the report's kernels a window are those the device ran, blocks included"
