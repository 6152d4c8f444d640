#!/usr/bin/env bash
# cufold_man.sh - the installed man page and command: the page renders with no troff warning and
# no markdown residue (code fences as no-fill blocks, no backticks, no ** or links), has EXIT
# STATUS, the card syntax (the README's, statement by statement), the real install paths (not
# "prefix/lib"), and every "see ..." names a section of the page or of the installed README that
# exists; the installed cufold --version is the VERSION file's without the source tree; `make
# uninstall` removes all of it. tests layer.
source "$(dirname "$0")/lib.sh"

mk() { make --no-print-directory -s BUILD="$B" -o "$B/libcufold.so" "$@" >/dev/null || fail "make $*"; }
mk install PREFIX=/opt/cf DESTDIR="$TMP/d"
base=$TMP/d/opt/cf
page=$base/share/man/man1/cufold.1
[[ -f $page && -f $base/share/doc/cufold/README.md ]] || fail "no man page or README installed"

# renders, without a warning
groff -man -Tutf8 -ww -z "$page" 2>"$TMP/warn" || fail "groff failed on the page"
[[ ! -s $TMP/warn ]] || { head "$TMP/warn"; fail "groff warns about the page"; }
MANWIDTH=100 man -l "$page" >"$TMP/page.txt" 2>"$TMP/warn" || groff -man -Tutf8 "$page" >"$TMP/page.txt" ||
	fail "the page does not render"
note "renders: $(wc -l <"$TMP/page.txt") lines"

# no markdown residue in the rendered page
for residue in '```' '`' '**' '](' '|---' 'prefix/lib'; do
	grep -nF -- "$residue" "$TMP/page.txt" | head -3 | grep . && fail "markdown residue '$residue' in the page"
done
# the README's code fences are no-fill blocks: the example card's lines stay lines
grep -q '^ *param y ptr rw n\*4$' "$TMP/page.txt" && grep -q '^ *end$' "$TMP/page.txt" ||
	fail "the example card is not a block of its own lines"
grep -q '^ *cufold check  *# the driver' "$TMP/page.txt" || fail "the opening example is not a block"
note "no markdown residue; code blocks kept as lines"

# the sections
for s in NAME SYNOPSIS DESCRIPTION COMMANDS 'EXIT STATUS' ENVIRONMENT 'KERNEL CARDS' FILES 'SEE ALSO'; do
	grep -q "^$s\$" "$TMP/page.txt" || fail "no $s section"
done
sed -n '/^EXIT STATUS$/,/^ENVIRONMENT$/p' "$TMP/page.txt" | tr -s ' \n' ' ' >"$TMP/exit"
for w in 'cufold run' '128+n' 126 127 'cufold report' 'cufold check'; do
	grep -qF "$w" "$TMP/exit" || fail "EXIT STATUS does not mention '$w'"
done
# every statement of the README's card syntax is in the page
sed -n '/^### Card syntax/,/^### /p' README.md | sed -n '/^```$/,/^```$/p' | grep -Eo '^[a-z]+( [A-Za-z]+)*' |
	sort -u >"$TMP/stmts"
[[ $(wc -l <"$TMP/stmts") -ge 10 ]] || fail "the README's card syntax has $(wc -l <"$TMP/stmts") statements"
while read -r st; do
	grep -q "^ *$st" "$TMP/page.txt" || fail "the page lacks the card statement '$st'"
done <"$TMP/stmts"
# real paths
grep -q '/opt/cf/lib/libcufold.so' "$TMP/page.txt" && grep -q '/opt/cf/share/cufold/' "$TMP/page.txt" ||
	fail "the page does not name the install paths"
note "EXIT STATUS, $(wc -l <"$TMP/stmts") card statements, /opt/cf paths"

# every reference leads somewhere that exists
python3 - "$TMP/page.txt" >"$TMP/refs" <<'PY'
import re, sys
text = re.sub(r"\u2010\s+", "", open(sys.argv[1]).read())  # words hyphenated at line ends
text = re.sub(r"\s+", " ", text)
for r in sorted(set(re.findall(r"\b[Ss]ee (\"[^\"]+\" in \S+?|[^;),]*?)(?=[;),]|\. |\.$)", text))):
    print("see " + r)
PY
n=0
while read -r ref; do
	n=$((n + 1))
	case $ref in
	"see KERNEL CARDS below" | "see ENVIRONMENT below" | "see COMMANDS above" | "see CUFOLD_"*) continue ;;
	'see "'*'" in '*)
		sec=${ref#see \"}; sec=${sec%%\"*}; sec=${sec%%:*}; file=${ref##* in }
		[[ -f $TMP/d$file ]] || fail "'$ref': $file is not installed"
		grep -qx "## $sec" "$TMP/d$file" || fail "'$ref': the README has no section '$sec'"
		;;
	*) grep -qi "^${ref#see }" "$TMP/page.txt" || fail "the page refers to '$ref', which is nowhere" ;;
	esac
done <"$TMP/refs"
note "$n references, each to a section that exists"

# the installed command knows its version without the source tree
out=$(env -u CUFOLD_LIB "$base/bin/cufold" --version) || fail "installed --version failed"
[[ $out == "cufold $(cat VERSION)" ]] || fail "installed --version says '$out'"
grep -q '@CUFOLD_VERSION@' "$base/bin/cufold" && fail "the version was not written into the installed command"
note "installed: $out"

mk uninstall PREFIX=/opt/cf DESTDIR="$TMP/d"
left=$(find "$TMP/d" -type f)
[[ -z $left ]] || fail "make uninstall left: $left"
note "make uninstall removes it all"
