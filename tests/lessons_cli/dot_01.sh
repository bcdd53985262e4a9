#!/bin/sh
# dot_01.sh LESSON_01 — chapter 01's --dot FILE when the file cannot be written whole: with
# a file-size limit of 0 every write fails (EFBIG), as on a full disk. The program must say
# so in one line and exit 1, leave no file behind, and never claim "graph written".
L="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
out=$(trap '' XFSZ; ulimit -f 0; "$L" --dot g.dot 2>&1); rc=$?
printf '%s\n' "$out" | tail -3
[ "$rc" -eq 1 ] || fail "exit code $rc, expected 1"
printf '%s\n' "$out" | grep -q "graph written" && fail "it claims the graph was written"
[ "$(printf '%s\n' "$out" | grep -c '^lesson_01: --dot: ')" -eq 1 ] || fail "expected one line 'lesson_01: --dot: ...'"
[ -z "$(ls -A)" ] || fail "files left behind: $(ls -A)"
# And with room to write, the file is complete.
"$L" --dot g.dot >/dev/null || fail "a normal run failed"
grep -q "^digraph" g.dot && tail -n 1 g.dot | grep -q "}" || fail "g.dot is not a whole graph"
echo "ok"
