#!/bin/bash
# class_grade.sh LAB SOURCE SOLVED_01 CALLS_FRAMEWORK_01 DIAGONAL_01 UNTOUCHED_02 — `./lab class
# grade` on a folder of submissions, in a scratch root, with a fake `cmake` first on PATH.
#
# The graders are real ones of the test build, each built from one file (kExerciseSha256):
# chapter 01's solution (passes), 01_calls_framework (refused: calls hg::softmax),
# 01_diagonal_only (not yet) and chapter 02 as shipped (not yet, 0). The fake cmake "builds"
# class_check_NN by linking the grader that was built from the file now in build/class/, and
# fails like a compiler for a file no grader was built from. Five students:
#   ada   01 the solution, 02 as shipped, hints.txt        -> passed 5/5 hints 3; not yet 0/3
#   bob   01 calls hg::softmax, 02 does not compile,        -> refused; does not compile
#         hints in report.json
#   cy d  01 the same file as ada's, no 02                  -> passed, same file as ada; not handed in
#   dee   01 only the diagonal (STUDENT/NN_slug/ layout)    -> not yet, the first wrong check
#   eve   01 a file whose grader is stale (built from another file) -> grader failed
# Checked: grades.csv row by row (result, score, hints, the SHA-256 of the file handed in, a
# seed for every graded file, same file as), grades.md's summary, one build per student and
# no grader of an earlier student reused, bad arguments (exit 2, one line).
set -u
LAB="$1" SOURCE="$2" SOLVED="$3" CALLS="$4" DIAGONAL="$5" UNTOUCHED="$6"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp "$LAB" "$T/lab"
for slug in 01_tensors_autograd 02_fp32_training; do
  mkdir -p "$T/lessons/$slug" "$T/tests/exercises/untouched"
  : >"$T/lessons/$slug/check.cpp"; : >"$T/lessons/$slug/exercise.cpp"
  cp "$SOURCE/tests/exercises/untouched/$slug.cpp" "$T/tests/exercises/untouched/$slug.cpp"
  printf '# Chapter %s exercise: the %s exercise\n\n## Hint 1\nh\n' "${slug:0:2}" "$slug" >"$T/lessons/$slug/exercise_hints.md"
done
mkdir -p "$T/lessons/01_tensors_autograd/solution" "$T/build/lessons" "$T/bin"
: >"$T/build/CMakeCache.txt"; : >"$T/build/build.ninja"

solution="$SOURCE/lessons/01_tensors_autograd/solution/exercise.cpp"
sha() { sha256sum "$1" | cut -c1-64; }
S="$T/sub"
mkdir -p "$S/ada/lessons/01_tensors_autograd" "$S/ada/lessons/02_fp32_training" "$S/bob/lessons/01_tensors_autograd" \
         "$S/bob/lessons/02_fp32_training" "$S/cy d/lessons/01_tensors_autograd" "$S/dee/01_tensors_autograd" \
         "$S/eve/lessons/01_tensors_autograd"
cp "$solution" "$S/ada/lessons/01_tensors_autograd/exercise.cpp"
cp "$SOURCE/tests/exercises/untouched/02_fp32_training.cpp" "$S/ada/lessons/02_fp32_training/exercise.cpp"
printf '01=3\n02=1\n' >"$S/ada/hints.txt"
cp "$SOURCE/tests/exercises/wrong/01_calls_framework.cpp" "$S/bob/lessons/01_tensors_autograd/exercise.cpp"
printf 'LinearGrads linear_backward(\n' >"$S/bob/lessons/02_fp32_training/exercise.cpp"
printf '{\n  "student": "bob",\n  "chapters": [\n    {"chapter": "01", "status": "passed", "hint_level": 2},\n    {"chapter": "02", "status": "not yet", "hint_level": 0}\n  ]\n}\n' >"$S/bob/report.json"
cp "$solution" "$S/cy d/lessons/01_tensors_autograd/exercise.cpp"
cp "$SOURCE/tests/exercises/wrong/01_diagonal_only.cpp" "$S/dee/01_tensors_autograd/exercise.cpp"
printf '// mine\n' | cat - "$solution" >"$S/eve/lessons/01_tensors_autograd/exercise.cpp"

# Which grader was built from which file; eve's file gets the solution's grader (stale).
{
  echo "$(sha "$solution") $SOLVED"
  echo "$(sha "$SOURCE/tests/exercises/wrong/01_calls_framework.cpp") $CALLS"
  echo "$(sha "$SOURCE/tests/exercises/wrong/01_diagonal_only.cpp") $DIAGONAL"
  echo "$(sha "$SOURCE/tests/exercises/untouched/02_fp32_training.cpp") $UNTOUCHED"
  echo "$(sha "$S/eve/lessons/01_tensors_autograd/exercise.cpp") $SOLVED"
} >"$T/graders"
cat >"$T/bin/cmake" <<'FAKE'
#!/bin/bash
echo "cmake $*" >>"$CMAKE_LOG"
build="" rc=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift ;;
    --target)
      nn=${2#class_check_}
      file=$(ls "$build"/class/lessons/"$nn"_*/exercise.cpp)
      grader=$(grep "^$(sha256sum "$file" | cut -c1-64) " "$FAKE_GRADERS" | cut -d' ' -f2)
      if [ -n "$grader" ]; then ln -sf "$grader" "$build/lessons/$2"
      else echo "$file:1:25: error: expected primary-expression at end of input"; rc=1; fi
      shift ;;
  esac
  shift
done
exit $rc
FAKE
chmod +x "$T/bin/cmake"
export PATH="$T/bin:$PATH" CMAKE_LOG="$T/cmake.log" FAKE_GRADERS="$T/graders" HG_BUILD_DIR="$T/build"
unset HG_JOBS
cd "$T" || exit 1

out=$(./lab class grade sub --out grades --quick 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "class grade: exit $rc"
csv="$T/grades/grades.csv"
[ -f "$csv" ] && [ -f "$T/grades/grades.md" ] || fail "grades.csv and grades.md were not written"
cat "$csv"
[ "$(head -n 1 "$csv")" = "student,chapter,result,score,of,hints_reported,seed,sha256,same_file_as,detail" ] \
  || fail "the header: $(head -n 1 "$csv")"
[ "$(wc -l <"$csv")" -eq 11 ] || fail "expected 10 rows (5 students, 2 chapters), got $(($(wc -l <"$csv") - 1))"

# row STUDENT NN RESULT SCORE OF HINTS SAME DETAIL_REGEX [FILE]: the row says that; its seed is
# a number when a grader ran; its SHA-256 is the file's.
row() {
  local line
  line=$(grep "^\"$1\",$2," "$csv") || fail "no row for $1, chapter $2"
  IFS=, read -r _ _ result score of hints seed sha _ <<<"$line"
  [ "$result" = "\"$3\"" ] || fail "$1 $2: result $result, expected $3 ($line)"
  [ "$score" = "$4" ] && [ "$of" = "$5" ] || fail "$1 $2: score $score of $of, expected $4 of $5"
  [ "$hints" = "$6" ] || fail "$1 $2: hints '$hints', expected '$6'"
  [[ "$line" == *",\"$7\","* ]] || fail "$1 $2: same file as: expected '$7' ($line)"
  [[ "$line" =~ $8 ]] || fail "$1 $2: the detail does not match '$8' ($line)"
  if [ -n "$4" ]; then [[ "$seed" =~ ^[0-9]+$ ]] || fail "$1 $2: no seed ($line)"; fi
  if [ -n "${9:-}" ]; then [ "$sha" = "$(sha "$9")" ] || fail "$1 $2: sha256 $sha is not the file's"; fi
  echo "ok: $1, chapter $2: $3"
}
row ada 01 passed 5 5 3 "cy d" ',""$' "$S/ada/lessons/01_tensors_autograd/exercise.cpp"
row ada 02 "not yet" 0 3 1 "" '"the exercise as shipped; dX' "$S/ada/lessons/02_fp32_training/exercise.cpp"
row bob 01 refused 0 5 2 "" '"calls hg::softmax, the engine' "$S/bob/lessons/01_tensors_autograd/exercise.cpp"
row bob 02 "does not compile" "" "" 0 "" '"exercise\.cpp:1:25: error: expected primary-expression' \
    "$S/bob/lessons/02_fp32_training/exercise.cpp"
row "cy d" 01 passed 5 5 "" ada ',""$' "$S/cy d/lessons/01_tensors_autograd/exercise.cpp"
row "cy d" 02 "not handed in" "" "" "" "" ',""$'
row dee 01 "not yet" 0 5 "" "" 'element \([0-9]+, [0-9]+\) of dx' "$S/dee/01_tensors_autograd/exercise.cpp"
row eve 01 "grader failed" "" "" "" "" 'it graded another file' "$S/eve/lessons/01_tensors_autograd/exercise.cpp"

md="$T/grades/grades.md"
grep -qF '| ada | 5/5 pass | 0/3 |' "$md" || fail "grades.md's summary row of ada: $(grep '^| ada' "$md")"
grep -qF '| bob | refused | does not compile |' "$md" || fail "grades.md's summary row of bob"
grep -qF '| cy d | 5/5 pass | – |' "$md" || fail "grades.md's summary row of cy d"
[ "$(grep -c -- '--build' "$T/cmake.log")" -eq 5 ] || fail "expected one build per student: $(cat "$T/cmake.log")"
grep -q -- "--target class_check_01 --target class_check_02 -- -k 0" "$T/cmake.log" \
  || fail "a student's graders are built together, keeping going past one that fails: $(cat "$T/cmake.log")"
echo "ok: grades.md's table; one build per student; bob's 02 is not graded by ada's grader"

mkdir "$T/empty"
for args in "class" "class frobnicate" "class grade" "class grade no_such_folder" "class grade sub --out" \
            "class grade sub other" "class grade empty"; do
  out=$(./lab $args 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "'lab $args': exit $rc, expected 2 ($out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "'lab $args' printed more than one line: $out"
done
echo "ok: bad arguments exit 2 with one line"
