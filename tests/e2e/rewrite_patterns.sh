# rewrite_patterns.sh - the rewrite rules together, end to end, on tests/progs/rw_patterns.c:
# results bit for bit the same as without cufold over 20 seeds (steady and moving at
# CUFOLD_OPT=1 and 2, nearmiss at 2); the device's counters show the pattern operations of a
# steady step (copies, memsets, elementwise launches, cufold's own kernels counted as launches)
# cut by at least 90 % at CUFOLD_OPT=2; in nearmiss every pattern operation still executes; the
# moving run falls back on a failed guard. tests layer.
source "$(dirname "$0")/lib.sh"
prog=$B/progs/rw_patterns
[[ -x $prog ]] || fail "$prog is not built"
export CUFOLD_MODE=replay
unset CUFOLD_RULES

# (i) the same results with and without cufold
for opt in 1 2; do
	CUFOLD_OPT=$opt same_output_over_seeds "$prog" steady 12
	CUFOLD_OPT=$opt same_output_over_seeds "$prog" moving 24
done
CUFOLD_OPT=2 same_output_over_seeds "$prog" nearmiss 12
# without any card for the program's kernels every kernel may touch anything: fewer rewrites, the
# same results
CUFOLD_CARDS= CUFOLD_OPT=2 same_output_over_seeds "$prog" steady 12

# (iv) the moving run's guards failed mid-run: the calls went eagerly and the shape was re-planned
CUFOLD_OPT=2 CUFOLD_REPORT=$TMP/moving.json run_cufold /dev/null "$prog" moving 24 || fail "moving run exited $?"
grep -q 'a rewrite guard failed' "$TMP/moving.json" || fail "no template retired by a failed guard in the moving run"
grep -Eq '"GUARD": [1-9]' "$TMP/moving.json" || fail "the failed guard was not counted as a GUARD fallback"
note "moving: a GUARD fallback, template retired and re-planned"

# Counters per steady-state step (lib.sh's count_steps: $TMP/NAME.6.stats and NAME.16.stats)
count_steps sp plain "$prog" steady @STEPS@ --census
count_steps np plain "$prog" nearmiss @STEPS@ --census
for opt in 0 1 2; do
	CUFOLD_OPT=$opt CUFOLD_RULES= count_steps s$opt cufold "$prog" steady @STEPS@ --census
done
CUFOLD_OPT=0 CUFOLD_RULES= count_steps n0 cufold "$prog" nearmiss @STEPS@ --census
CUFOLD_OPT=2 CUFOLD_RULES= count_steps n2 cufold "$prog" nearmiss @STEPS@ --census
# -batch-kernel too: it removes no op, but runs a near miss's scale launches as one of scale_cf_multi
CUFOLD_OPT=2 CUFOLD_RULES=-batch-copy,-batch-kernel count_steps n2nb cufold "$prog" nearmiss @STEPS@ --census

python3 - "$TMP" <<'PY' || fail "the device's counters do not show the patterns rewritten as expected"
import json, os, re, sys
d = sys.argv[1]
PATTERN_KERNELS = ("scale", "relu")  # the program's repeated elementwise launches (census)

def stats(name):
    return json.load(open(os.path.join(d, name + ".stats")))

def census(name):
    m = re.search(r"^census: copies=(\d+) memsets=(\d+) elementwise_launches=(\d+)$",
                  open(os.path.join(d, name + ".out")).read(), re.M)
    if not m:
        sys.exit("%s: no census line" % name)
    return dict(zip(("copies", "memsets", "elementwise"), map(int, m.groups())))

def counts(name):
    s = stats(name)
    k = s["kernels"]
    return {"copies": s["totals"]["copies_executed"], "memsets": s["totals"]["memsets_executed"],
            "elementwise": sum(k.get(n, 0) for n in PATTERN_KERNELS),
            "cufold": sum(v for n, v in k.items() if n.startswith("cufold_")),
            **{"k:" + n: v for n, v in k.items()}}

def per_step(prefix):
    a, b = counts(prefix + ".6"), counts(prefix + ".16")
    return {key: (b.get(key, 0) - a.get(key, 0)) / 10.0 for key in set(a) | set(b)}

def rules(name):
    fired = {}
    for t in json.load(open(os.path.join(d, name + ".report")))["replay"]["templates"]:
        for r, n in t["rewrite"]["rules"].items():
            fired[r] = fired.get(r, 0) + n
    return fired

fails = []
def want(what, ok):
    if not ok:
        fails.append(what)

# The plain run executes exactly what the census says, plus the step's checksum copy (DtoH).
cen = census("sp.16")
want("the census is the same in every mode", census("np.16") == cen)
plain = per_step("sp")
other_copies = plain["copies"] - cen["copies"]
other_memsets = plain["memsets"] - cen["memsets"]
want("plain: one copy per step besides the census (the checksum), got %s" % other_copies, other_copies == 1)
want("plain: no memset besides the census, got %s" % other_memsets, other_memsets == 0)
want("plain: elementwise launches %s == census %s" % (plain["elementwise"], cen["elementwise"]),
     plain["elementwise"] == cen["elementwise"])

def pattern_ops(c):
    # what executes of the census: cufold's own kernels replace copies, memsets and launches
    return c["copies"] - other_copies + c["memsets"] - other_memsets + c["elementwise"] + c["cufold"]

rows = [("plain", "sp"), ("CUFOLD_OPT=0", "s0"), ("CUFOLD_OPT=1", "s1"), ("CUFOLD_OPT=2", "s2")]
base = pattern_ops(plain)
print("steady, per step: census %d pattern ops (copies %d, memsets %d, elementwise launches %d)" %
      (sum(cen.values()), cen["copies"], cen["memsets"], cen["elementwise"]))
for label, prefix in rows:
    c = per_step(prefix)
    print("  %-13s copies %5.1f  memsets %5.1f  scale+relu %5.1f  cufold_* %4.1f  => pattern ops %5.1f (cut %5.1f %%)" %
          (label, c["copies"] - other_copies, c["memsets"] - other_memsets, c["elementwise"], c["cufold"],
           pattern_ops(c), 100.0 * (1 - pattern_ops(c) / base)))
for label, name in (("CUFOLD_OPT=1", "s1.16"), ("CUFOLD_OPT=2", "s2.16")):
    print("  rules fired at %s: %s" % (label, rules(name)))
want("plain pattern ops %s == census %s" % (base, sum(cen.values())), base == sum(cen.values()))
want("CUFOLD_OPT=0 executes what the plain run does", pattern_ops(per_step("s0")) == base)
opt2 = pattern_ops(per_step("s2"))
# where the rest comes from, when the cut falls short: what each rule leaves of its family
s2 = per_step("s2")
for what, got, best, rule in (("scale launches", s2["k:scale"], 1, "batch-elementwise"),
                              ("relu launches", s2["k:relu"], 1, "duplicate"),
                              ("copies", s2["copies"] - other_copies, 0, "slice-glue/copy-chain/dead-write/batch-copy"),
                              ("memsets", s2["memsets"] - other_memsets, 0, "coalesce/duplicate/batch-copy")):
    if got > best:
        print("  CUFOLD_OPT=2 leaves %.1f %s per step (%s can make %d)" % (got, what, rule, best))
want("CUFOLD_OPT=2 cuts the steady step's pattern ops by >= 90 %%: %.1f of %.1f left (%.1f %%)" %
     (opt2, base, 100.0 * (1 - opt2 / base)), opt2 <= 0.1 * base)

# nearmiss: nothing of the census may go. batch-copy may legitimately fold independent copies into
# its kernel (its ranges are not counted by the device), so the counts are compared without it;
# with it, the report must show that no rule which removes operations fired.
n0, n2 = per_step("n0"), per_step("n2nb")
print("nearmiss, per step: CUFOLD_OPT=0 copies %.1f memsets %.1f scale+relu %.1f; CUFOLD_OPT=2 -batch-copy,-batch-kernel copies "
      "%.1f memsets %.1f scale+relu %.1f cufold_* %.1f" %
      (n0["copies"] - other_copies, n0["memsets"] - other_memsets, n0["elementwise"],
       n2["copies"] - other_copies, n2["memsets"] - other_memsets, n2["elementwise"], n2["cufold"]))
for key in sorted(set(n0) | set(n2)):
    if key in ("cufold",) or key.startswith("k:cufold_"):
        continue
    want("nearmiss %s: CUFOLD_OPT=2 -batch-copy,-batch-kernel %s, CUFOLD_OPT=0 %s" % (key, n2.get(key, 0), n0.get(key, 0)),
         n2.get(key, 0) == n0.get(key, 0))
want("nearmiss: cufold's own kernels ran without batch-copy", n2["cufold"] == 0)
want("nearmiss: CUFOLD_OPT=0 runs the census", pattern_ops(n0) == sum(cen.values()))
fired = rules("n2.16")
print("  rules fired on nearmiss at CUFOLD_OPT=2: %s" % fired)
for r in ("slice-glue", "dead-write", "duplicate", "coalesce", "batch-elementwise", "identity-cat"):
    want("nearmiss: %s fired %d times on a near miss" % (r, fired.get(r, 0)), fired.get(r, 0) == 0)

# horizontal fusion's figures: launches fused into how many, and why the rest ran alone
for name in ("s1.16", "s2.16"):
    fused, apart = [0, 0], {}
    for t in json.load(open(os.path.join(d, name + ".report")))["replay"]["templates"]:
        w = t["rewrite"]
        fused = [fused[0] + w["kernels_fused"][0], fused[1] + w["kernels_fused"][1]]
        for k, v in w["kernels_apart"].items():
            apart[k] = apart.get(k, 0) + v
    print("  %s: kernels fused %s, apart %s" % (name, fused, apart))
    want("%s: the report says why launches ran alone" % name,
         set(apart) == {"no_variant", "effects_unknown", "alone", "unknown_between", "memory_reused", "ordered"}
         and sum(apart.values()) > 0)
    want("%s: the report says what writing elsewhere did and would fuse" % name,
         all(set(t["rewrite"]["renamable"]) == {"launches", "whole", "bytes", "renamed", "renamed_bytes",
                                                 "copied_back", "copied_back_for_readers", "readers_kept"} and
             t["rewrite"]["renamable"]["launches"] <= t["rewrite"]["kernels_apart"]["memory_reused"]
             for t in json.load(open(os.path.join(d, name + ".report")))["replay"]["templates"]))

if fails:
    sys.exit("\n".join("FAIL: " + f for f in fails))
PY
note "steady: >= 90 % of the pattern ops cut at CUFOLD_OPT=2; nearmiss: every pattern op still executes"
