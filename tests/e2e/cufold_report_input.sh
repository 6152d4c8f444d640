#!/usr/bin/env bash
# cufold_report_input.sh - `cufold report` on what an operator's folder really holds: valid JSON
# of the wrong shape (strings where numbers belong, null, NaN, infinities, negative or missing
# totals, arrays as ids), deep nesting, truncated and binary files, escape sequences, a
# non-report .json, a FIFO and a device: each explained in one line on stderr, no traceback, no
# hang, the valid reports still summarised (exit 1 when an input was bad); the same file given
# twice, through a link or a folder and a path, counted once; 1000 mutated reports (fuzz-ish)
# summarised or explained, never a traceback; the time per window eager and
# replayed and the estimated saving, labelled modeled on the software device. tests layer.
source "$(dirname "$0")/lib.sh"

CMD="$ROOT/scripts/cufold"
export CUFOLD_LIB="$CUFOLD"

CUFOLD_REPORT="$TMP/good.json" run_cufold "$TMP/out" "$B/progs/rpl_loop" train 20 || fail "rpl_loop failed"
CUFOLD_REPORT="$TMP/good2.json" run_cufold "$TMP/out" "$B/progs/rpl_loop" train 12 || fail "rpl_loop failed"
# a report with kernel rewrites (device_work, kernels_apart) for the mutations below
CUFOLD_REPORT="$TMP/fused.json" run_cufold "$TMP/out" "$B/progs/rw_bk_streams" fuse 12 || fail "rw_bk_streams failed"
"$CMD" report "$TMP/good.json" >/dev/null 2>"$TMP/err" && [[ ! -s $TMP/err ]] || fail "a valid report: $(cat "$TMP/err")"

# hostile files: NAME, then a Python expression turning the valid report d into it (or text)
mkdir -p "$TMP/bad"
python3 - "$TMP/good.json" "$TMP/bad" <<'PY' || fail "could not write the hostile files"
import copy, json, os, sys
good = json.load(open(sys.argv[1]))
out = sys.argv[2]
def edit(name, fn):
    d = copy.deepcopy(good)
    fn(d)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(d, f)
def text(name, data):
    with open(os.path.join(out, name + ".json"), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
edit("string-ops", lambda d: d["totals"].__setitem__("ops", "954"))
edit("null-totals", lambda d: d.__setitem__("totals", None))
edit("null-replayed", lambda d: d["replay"].__setitem__("ops_replayed", None))
edit("negative-ops", lambda d: d["totals"].__setitem__("ops", -5))
edit("missing-totals", lambda d: d.pop("totals"))
edit("missing-ops", lambda d: d["totals"].pop("ops"))
edit("list-id", lambda d: d["shapes"][0].__setitem__("id", [1, 2]))
edit("string-gate", lambda d: d["replay"]["templates"][0]["gate"].__setitem__("eager_ns_per_window", "x"))
edit("string-boundary", lambda d: d["boundaries"].__setitem__("SYNC", "x"))
edit("bool-windows", lambda d: d["totals"].__setitem__("windows", True))
edit("object-shapes", lambda d: d.__setitem__("shapes", {"0": 1}))
edit("string-fallback", lambda d: d["replay"].__setitem__("fallbacks", {"MISMATCH": "many"}))
s = json.dumps(good)
text("nan", s.replace('"ops": %d' % good["totals"]["ops"], '"ops": NaN', 1))
text("infinity", s.replace('"ops": %d' % good["totals"]["ops"], '"ops": 1e999', 1))
text("deep", '{"cufold_report": {}, "totals": ' + "[" * 100000 + "]" * 100000 + "}")
text("deep-shapes", '{"cufold_report": {}, "totals": {"windows": 1, "ops": 1}, "shapes": [' + "[" * 5000 + "]" * 5000 + "]}")
text("truncated", s[:len(s) // 2])
text("binary", bytes(range(256)) * 4)
text("empty", "")
text("array", "[1, 2, 3]")
PY
mkfifo "$TMP/bad/fifo.json"
n=0
for f in "$TMP"/bad/*.json /dev/zero; do
	timeout 20 "$CMD" report "$f" >"$TMP/out" 2>"$TMP/err"; rc=$?
	[[ $rc == 124 ]] && fail "report $f hangs"
	grep -q Traceback "$TMP/err" && { cat "$TMP/err"; fail "report $f: a traceback"; }
	[[ $rc == 1 ]] || { cat "$TMP/err"; fail "report $f: exit $rc, not 1"; }
	# one line, about the file
	[[ $(grep -c "$f" "$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "report $f: not one line about it"; }
	[[ $(wc -l <"$TMP/err") == 1 ]] || { cat "$TMP/err"; fail "report $f: not one line"; }
	# with a valid report beside it: the valid one is still summarised
	timeout 20 "$CMD" report "$TMP/good.json" "$f" >"$TMP/out" 2>"$TMP/err"; rc=$?
	[[ $rc == 1 ]] && grep -q '^cufold report: 1 process' "$TMP/out" && [[ $(wc -l <"$TMP/err") == 1 ]] ||
		{ cat "$TMP/err" "$TMP/out"; fail "report good + $f: exit $rc, no summary of the good one"; }
	n=$((n + 1))
done
note "$n hostile inputs: one line each, no traceback, no hang; e.g. $(timeout 20 "$CMD" report "$TMP/bad/string-ops.json" 2>&1 | head -1)"

# a folder: two ranks' reports, a malformed one, a non-report .json, a FIFO
mkdir -p "$TMP/job"
cp "$TMP/good.json" "$TMP/job/r.1.json"; cp "$TMP/good2.json" "$TMP/job/r.2.json"
cp "$TMP/bad/negative-ops.json" "$TMP/job/r.3.json"
echo '{"device": "simcuda", "totals": {"calls": 3}}' >"$TMP/job/stats.json"
mkfifo "$TMP/job/r.4.json"
timeout 20 "$CMD" report "$TMP/job" >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc == 1 ]] && grep -q '^cufold report: 2 processes' "$TMP/out" ||
	{ cat "$TMP/err" "$TMP/out"; fail "a folder with a bad rank: exit $rc, not the two good ranks"; }
grep -q 'r.3.json.*negative' "$TMP/err" && grep -q 'stats.json.*not a cufold report' "$TMP/err" &&
	grep -q 'r.4.json.*FIFO' "$TMP/err" || { cat "$TMP/err"; fail "the folder's bad files are not each explained"; }
rm "$TMP/job/r.3.json" "$TMP/job/r.4.json"
"$CMD" report "$TMP/job" >/dev/null 2>"$TMP/err" || fail "a folder whose only other file is not a report: exit $?"
note "folder: 2 good ranks summarised, $(wc -l <"$TMP/err") other file(s) explained"

# the same file counted once: twice, through a symbolic link, through its folder
ln -s "$TMP/job/r.1.json" "$TMP/link.json"
"$CMD" report "$TMP/job/r.1.json" "$TMP/job/r.1.json" "$TMP/link.json" "$TMP/job" >"$TMP/out" 2>"$TMP/err" ||
	fail "report of one file many ways: exit $?"
grep -q '^cufold report: 2 processes' "$TMP/out" || { cat "$TMP/out"; fail "the same file counted more than once"; }
ops=$(python3 -c 'import json,sys; print(sum(json.load(open(f))["totals"]["ops"] for f in sys.argv[1:]))' "$TMP/good.json" "$TMP/good2.json")
grep -Eq "^  ops recorded +$ops in" "$TMP/out" || { cat "$TMP/out"; fail "ops are not those of the two files ($ops)"; }
note "one file given four ways counts once ($ops ops)"

# escape sequences in a report's strings are not sent to the terminal
python3 - "$TMP/good.json" "$TMP/esc.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["boundaries"]["HOST_COPY"]["label"] = "\x1b]0;owned\x07\x1b[31mred"
d["cufold_report"]["mode"] = "\x1b[2J"
json.dump(d, open(sys.argv[2], "w"))
PY
"$CMD" report "$TMP/esc.json" >"$TMP/out" 2>&1 || fail "report with escapes: exit $?"
grep -q $'\x1b' "$TMP/out" && fail "an escape sequence from the report reached the terminal"
grep -q 'x1b\[31mred' "$TMP/out" || fail "the label is not shown escaped"
note "escape sequences shown as \\x1b"

# time per window, eager vs replayed, and the estimated saving
"$CMD" report "$TMP/good.json" >"$TMP/out" || fail "report failed"
grep -q 'Time per window, eager vs replayed (MODELED' "$TMP/out" && grep -q 'estimated time saved: .* (modeled)' "$TMP/out" ||
	{ cat "$TMP/out"; fail "no time per window or saving (labelled modeled)"; }
"$CMD" report --json "$TMP/good.json" >"$TMP/out.json" || fail "report --json failed"
python3 - "$TMP/good.json" "$TMP/out.json" <<'PY' || fail "the saving is not eager - replayed per window x windows replayed"
import json, sys
d, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = sum((t["gate"]["eager_ns_per_window"] - t["gate"]["replayed_ns_per_window"]) * t["windows_replayed"]
           for t in d["replay"]["templates"] if t.get("gate") and t["gate"]["eager_ns_per_window"] > 0
           and t["gate"]["replayed_ns_per_window"] > 0) / 1000.0
ts = a["time_saved"]
assert want > 0, want
assert abs(ts["estimated_saving_us"] - want) < 0.01, (ts, want)
assert ts["modeled"] is True and ts["per_shape"], ts
PY
note "$(grep 'estimated time saved' "$TMP/out" | sed 's/^ *//')"

# fuzz-ish: 1000 reports with one to three values replaced by another type, a negative, a huge
# number or an escape sequence, or removed; each is summarised or explained in one line, never a
# traceback (the command's functions called in this process, for speed)
cat >"$TMP/fuzz.py" <<'PY'
import copy, importlib.machinery, importlib.util, io, json, random, sys, os
loader = importlib.machinery.SourceFileLoader("cufold_cmd", sys.argv[1])
spec = importlib.util.spec_from_loader("cufold_cmd", loader)
cf = importlib.util.module_from_spec(spec)
loader.exec_module(cf)
good = json.load(open(sys.argv[2]))
rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
VALUES = [None, True, False, -1, 0, 1, 2.5, -3.5, 1e308, "x", "", "\x1b[2J", [], [1], {}, {"a": 1}, 10 ** 30]
def paths(d, pre=()):
    yield pre
    if isinstance(d, dict):
        for k, v in d.items():
            yield from paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d[:3]):
            yield from paths(v, pre + (i,))
allp = [p for p in paths(good) if p]
valid = rejected = 0
for n in range(1000):
    d = copy.deepcopy(good)
    for _ in range(rnd.randint(1, 3)):
        p = rnd.choice(allp)
        t = d
        try:
            for k in p[:-1]:
                t = t[k]
            if rnd.random() < 0.15 and isinstance(t, dict):
                t.pop(p[-1], None)
            else:
                t[p[-1]] = rnd.choice(VALUES)
        except (KeyError, IndexError, TypeError):
            pass
    text = json.dumps(d)
    path = sys.argv[2] + ".fuzz"
    with open(path, "w") as f:
        f.write(text)
    try:
        doc = cf.load_report(path)
    except cf.Failure as e:
        assert "\n" not in str(e), e
        rejected += 1
        continue
    a = cf.analyse([doc], [path])
    cf.print_report(a, io.StringIO())
    json.dumps(a)
    valid += 1
print("%d mutated reports of %s: %d accepted and summarised, %d explained in one line" % (
    valid + rejected, os.path.basename(sys.argv[2]), valid, rejected))
PY
for good in good fused; do
	python3 "$TMP/fuzz.py" "$CMD" "$TMP/$good.json" 1 >"$TMP/fuzz" ||
		{ tail -5 "$TMP/fuzz"; fail "a mutated report ($good.json) broke cufold report"; }
	note "$(cat "$TMP/fuzz")"
done
