#!/bin/bash
# class_copy.sh SOURCE — the student edition (./lab class student-copy), ./lab reset and
# ./lab class hand-in.
#   1. student-copy of this repository: no solution/ folder, no tests/exercises/wrong/, no
#      docs/teaching.md; every other file of the repository as it is, but the last hint of
#      each exercise, sealed (its heading kept, the hints before it as they are); a git
#      repository with a clean status; it configures (cmake) without the solutions, and
#      ./lab check NN --hint there shows the sealed hint, naming no solution. The teacher's
#      copy keeps its solutions. A folder that is not empty, or inside the repository: exit 2.
#   2. reset, in a scratch root: asks first (no answer, or "n": nothing changes), keeps the
#      student's file as a backup, --yes asks nothing, an exercise as shipped is left alone;
#      no such chapter or no exercise: exit 2.
#   3. hand-in: the exercise files and the hint levels, into DIR/NAME.
set -u
SOURCE="$1"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- 1. the student edition ----------------------------------------------------------------
out=$("$SOURCE/lab" class student-copy "$T/edition" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "student-copy: exit $rc"
E="$T/edition"
left=$(cd "$E" && find . \( -name solution -o -path ./tests/exercises/wrong -o -path ./docs/teaching.md \) -print)
[ -z "$left" ] || fail "the student edition holds: $left"
ls "$SOURCE"/lessons/*/solution/exercise.cpp >/dev/null 2>&1 || fail "the teacher's copy lost its solutions"
if git -C "$SOURCE" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  expected=$(git -C "$SOURCE" ls-files | grep -Ev '^(lessons/[^/]*/solution/|tests/exercises/wrong/|docs/teaching\.md$)' \
             | while IFS= read -r f; do [ -f "$SOURCE/$f" ] && echo "$f"; done | sort)
  got=$(cd "$E" && find . -path ./.git -prune -o -type f -print | sed 's:^\./::' | sort)
  [ "$expected" = "$got" ] || fail "the files differ from the repository's: $(diff <(echo "$expected") <(echo "$got") | head -n 5)"
  while IFS= read -r f; do
    case "$f" in lessons/*/exercise_hints.md) continue ;; esac
    cmp -s "$SOURCE/$f" "$E/$f" || fail "$f differs from the repository's"
  done <<<"$expected"
  [ -z "$(git -C "$E" status --porcelain)" ] || fail "the edition's git status is not clean"
  echo "ok: $(echo "$got" | wc -l) files, each the repository's; git status clean"
fi
for hints in "$SOURCE"/lessons/*/exercise_hints.md; do
  slug=$(basename "$(dirname "$hints")"); mine="$E/lessons/$slug/exercise_hints.md"
  n=$(grep -c '^## Hint [0-9]' "$hints")
  [ "$(grep -c '^## Hint [0-9]' "$mine")" -eq "$n" ] || fail "$slug: the number of hints changed"
  last=$(awk -v h="## Hint $n" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$mine")
  [ "$last" = "(Sealed in the student edition: ask your teacher for the last hint.)" ] || fail "$slug: hint $n is not sealed: $last"
  before=$(awk -v h="## Hint $n" '$0 == h { exit } { print }' "$hints")
  [ "$before" = "$(awk -v h="## Hint $n" '$0 == h { exit } { print }' "$mine")" ] || fail "$slug: the hints before the last changed"
done
echo "ok: the last hint of every exercise sealed, the others as they are"
hint=$(HG_BUILD_DIR="$T/edition-build" "$E/lab" check 01 --hint 3 2>&1) || fail "check 01 --hint 3 in the edition: $hint"
[[ "$hint" == *"Sealed in the student edition"* && "$hint" == *"(that was the last hint)"* && "$hint" != *solution* ]] \
  || fail "check 01 --hint 3 in the edition says: $hint"
cmake -S "$E" -B "$T/edition-build" -DHG_CUDA=OFF -DHG_VIEWER=OFF >"$T/configure.log" 2>&1 \
  || { tail -n 20 "$T/configure.log"; fail "the student edition does not configure"; }
echo "ok: the edition configures; its last hint names no solution"
mkdir "$T/full" && : >"$T/full/x"
out=$("$SOURCE/lab" class student-copy "$T/full" 2>&1); rc=$?
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "student-copy into a folder that is not empty: exit $rc: $out"
out=$("$SOURCE/lab" class student-copy "$SOURCE/lessons/student-copy-test" 2>&1); rc=$?
[ "$rc" -eq 2 ] && [ ! -e "$SOURCE/lessons/student-copy-test" ] || fail "student-copy inside the repository: exit $rc: $out"
echo "ok: a folder that is not empty, or inside the repository, is refused"

# ---- 2. reset, in a scratch root -----------------------------------------------------------
R="$T/root"
mkdir -p "$R/lessons/01_alpha" "$R/lessons/02_beta" "$R/tests/exercises/untouched" "$R/build"
cp "$SOURCE/lab" "$R/lab"
printf 'int f() { return 0; }  // TODO\n' >"$R/tests/exercises/untouched/01_alpha.cpp"
cp "$R/tests/exercises/untouched/01_alpha.cpp" "$R/lessons/01_alpha/exercise.cpp"
: >"$R/lessons/01_alpha/check.cpp"; : >"$R/lessons/02_beta/main.cpp"
export HG_BUILD_DIR="$R/build"
backups() { ls "$R"/lessons/01_alpha/exercise.cpp.backup-* 2>/dev/null | wc -l; }
out=$("$R/lab" reset 01 </dev/null 2>&1) || fail "reset of an exercise as shipped: $out"
[[ "$out" == *"as shipped: nothing to do"* ]] || fail "reset of an exercise as shipped says: $out"
printf 'int f() { return 42; }  // mine\n' >"$R/lessons/01_alpha/exercise.cpp"
for answer in "" "n" "no thanks"; do
  out=$(printf '%s' "$answer" | "$R/lab" reset 01 2>&1); rc=$?
  [ "$rc" -eq 1 ] && [[ "$out" == *"Put the exercise back as shipped?"* && "$out" == *"nothing changed"* ]] \
    || fail "reset answered '$answer': exit $rc: $out"
  grep -q 'return 42' "$R/lessons/01_alpha/exercise.cpp" && [ "$(backups)" -eq 0 ] || fail "reset answered '$answer' changed something"
done
out=$(printf 'y\n' | "$R/lab" reset 01 2>&1) || fail "reset answered y: $out"
cmp -s "$R/lessons/01_alpha/exercise.cpp" "$R/tests/exercises/untouched/01_alpha.cpp" || fail "reset y did not restore the exercise"
[ "$(backups)" -eq 1 ] && grep -q 'return 42' "$R"/lessons/01_alpha/exercise.cpp.backup-* || fail "reset y kept no backup of the student's file"
[[ "$out" == *"yours is lessons/01_alpha/exercise.cpp.backup-"* ]] || fail "reset y does not say where the backup is: $out"
printf 'int f() { return 7; }\n' >"$R/lessons/01_alpha/exercise.cpp"
out=$("$R/lab" reset 01 --yes </dev/null 2>&1) || fail "reset --yes: $out"
[[ "$out" != *"[y/N]"* ]] && cmp -s "$R/lessons/01_alpha/exercise.cpp" "$R/tests/exercises/untouched/01_alpha.cpp" \
  && [ "$(backups)" -eq 2 ] || fail "reset --yes: $out"
for args in "reset" "reset 99" "reset 02" "reset 01 02" "reset 01 --force"; do
  out=$("$R/lab" $args </dev/null 2>&1); rc=$?
  [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "'lab $args': exit $rc: $out"
done
echo "ok: reset asks first, keeps a backup, --yes asks nothing; bad arguments exit 2"

# ---- 3. hand-in ----------------------------------------------------------------------------
mkdir -p "$R/build/lessons" && echo 2 >"$R/build/lessons/hints_01"
(cd "$R" && ./lab class hand-in "Ada L" out >/dev/null) || fail "hand-in"
cmp -s "$R/lessons/01_alpha/exercise.cpp" "$R/out/Ada L/lessons/01_alpha/exercise.cpp" || fail "hand-in: the exercise file"
[ "$(cat "$R/out/Ada L/hints.txt")" = "01=2" ] || fail "hand-in: hints.txt holds $(cat "$R/out/Ada L/hints.txt")"
out=$(cd "$R" && ./lab class hand-in ../evil out 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "hand-in ../evil: exit $rc: $out"
echo "ok: hand-in copies the exercise files and the hint levels; a name that is a path is refused"
