#!/bin/bash
# lab_check.sh LAB SOLVED_GRADER UNTOUCHED_GRADER CHEAT_GRADER REPORT_CHECK — the `./lab check`
# command.
#
# It runs a copy of ./lab in a scratch root, with a fake `cmake` first on PATH that records
# every call (so a build that should not happen is seen) and fails for check_03 (a learner's
# exercise that does not compile). Three real graders from the test build stand in for
# check_01 (solved), check_02 (as shipped) and check_12 (a cheat: its exercise prints PASS
# and writes a result file of its own, tests/exercises/wrong/12_writes_result.cpp); check_05
# is a grader that crashes; chapter 11 has no exercise. Checked:
#   - a chapter that does not exist, and one without an exercise, fail at once, exit 2,
#     without starting a build
#   - --hint prints the hints one level at a time, --hint N a given one, and remembers the level
#   - check all prints one table and --report writes the JSON a teacher collects (with the seed
#     of each grading and the SHA-256 of each file graded); --seed N repeats a grading
#   - the cheat's printed PASS counts for nothing: not yet, 0 of the grader's own number of
#     checks; a crashing grader is said in words, without the shell's "Segmentation fault"
#   - bad arguments exit 2 with one line: among them a --report that is a folder (nothing is
#     left in it) and a --name that is not UTF-8
set -u
LAB="$1" SOLVED="$2" UNTOUCHED="$3" CHEAT="$4" REPORT_CHECK="$5"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The scratch root: ./lab, five chapters with an exercise, one without, a configured build.
cp "$LAB" "$T/lab"
for ch in 01_alpha 02_beta 03_gamma 05_epsilon 12_delta; do
  mkdir -p "$T/lessons/$ch"
  : >"$T/lessons/$ch/check.cpp"; : >"$T/lessons/$ch/exercise.cpp"
  printf '# Chapter %s exercise: the %s exercise\n\n## Hint 1\nfirst hint of %s\n## Hint 2\nsecond hint of %s\n' \
    "${ch:0:2}" "${ch:3}" "$ch" "$ch" >"$T/lessons/$ch/exercise_hints.md"
done
mkdir -p "$T/lessons/11_no_exercise" "$T/build/lessons" "$T/bin"
: >"$T/lessons/11_no_exercise/main.cpp"
: >"$T/build/CMakeCache.txt"
ln -s "$SOLVED" "$T/build/lessons/check_01"
ln -s "$UNTOUCHED" "$T/build/lessons/check_02"
ln -s "$CHEAT" "$T/build/lessons/check_12"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$T/build/lessons/check_05"
chmod +x "$T/build/lessons/check_05"
cat >"$T/bin/cmake" <<'FAKE'
#!/bin/sh
echo "cmake $*" >>"$CMAKE_LOG"
case "$*" in *check_03*) echo "exercise.cpp:3:1: error: expected ';' before '}' token"; exit 1 ;; esac
exit 0
FAKE
chmod +x "$T/bin/cmake"
export PATH="$T/bin:$PATH" CMAKE_LOG="$T/cmake.log" HG_BUILD_DIR="$T/build"
unset HG_JOBS
run() { out=$("$T/lab" "$@" 2>&1); rc=$?; }

# 1. No such chapter; a chapter without an exercise: exit 2, one line, no build, at once.
start=$(date +%s%N)
run check 99
[ "$rc" -eq 2 ] || fail "check 99: exit $rc, expected 2 ($out)"
[[ "$out" == *"no chapter 99"* ]] || fail "check 99 says: $out"
run check 11
[ "$rc" -eq 2 ] || fail "check 11: exit $rc, expected 2 ($out)"
[[ "$out" == *"chapter 11 has no graded exercise"* ]] || fail "check 11 says: $out"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ ! -s "$T/cmake.log" ] || fail "a build was started for a chapter without an exercise: $(cat "$T/cmake.log")"
echo "ok: check 99 and check 11 (no exercise) exit 2 without building (both in $ms ms)"
[ "$ms" -lt 5000 ] || fail "they took $ms ms"

# 2. Hints, level by level; the level is kept in the build folder.
run check 01 --hint
[[ "$rc" -eq 0 && "$out" == *"Hint 1 of 2"*"first hint of 01_alpha"* ]] || fail "first --hint: $out"
run check 01 --hint
[[ "$rc" -eq 0 && "$out" == *"Hint 2 of 2"*"second hint of 01_alpha"*"last hint"* ]] || fail "second --hint: $out"
run check 01 --hint
[[ "$out" == *"Hint 2 of 2"* ]] || fail "a third --hint should repeat the last one: $out"
run check 01 --hint 1
[[ "$rc" -eq 0 && "$out" == *"Hint 1 of 2"* ]] || fail "--hint 1: $out"
[ "$(cat "$T/build/lessons/hints_01")" = 1 ] || fail "hints_01 holds $(cat "$T/build/lessons/hints_01")"
run check 01 --hint 3
[[ "$rc" -eq 2 && "$out" == *"hints 1 to 2"* ]] || fail "--hint 3: exit $rc: $out"
run check 02 --hint 2
[ ! -s "$T/cmake.log" ] || fail "--hint started a build: $(cat "$T/cmake.log")"
echo "ok: --hint gives 1, 2, 2 again; --hint 1; --hint 3 is refused; no build"

# 3. One chapter: the grader's own output and exit code.
run check 01
[[ "$rc" -eq 0 && "$out" == *"PASS"* ]] || fail "check 01 (solved): exit $rc: $out"
run check 02
[[ "$rc" -eq 1 && "$out" == *"Not yet: score 0 of"* ]] || fail "check 02 (as shipped): exit $rc: $out"
run check 03
[[ "$rc" -eq 1 && "$out" == *"does not compile"* && "$out" == *"expected ';'"* ]] \
  || fail "check 03 (does not compile): exit $rc: $out"
grep -q -- "--target check_01" "$T/cmake.log" || fail "check 01 did not build check_01: $(cat "$T/cmake.log")"
if grep -Ev -- "--target check_(0[1235]|12)" "$T/cmake.log" | grep -q .; then fail "other builds: $(cat "$T/cmake.log")"; fi
echo "ok: check 01 passes, check 02 fails 0 of N, check 03 shows the compiler's error; only check_NN is built"

# 3b. The cheat: its PASS line is printed, the verdict is the grader's. The crashing grader.
run check 12
checks=$(printf '%s\n' "$out" | grep -cE '^  \[(ok|WRONG| -- )\]')
[[ "$rc" -eq 1 && "$out" == *"PASS: score 9 of 9"* && "$out" == *"Not yet: score 0 of $checks."* ]] \
  || fail "check 12 (the cheat): exit $rc: $out"
run check 05
[[ "$rc" -eq 1 && "$out" == *"the grader of chapter 05 itself crashed (SEGV)"* ]] || fail "check 05 (crashes): exit $rc: $out"
[[ "$out" != *"Segmentation fault"* ]] || fail "check 05 shows the shell's message: $out"
echo "ok: the cheat's own PASS counts for nothing (0 of its $checks checks); a crashing grader is said in words"

# 3c. --seed N: the grader draws its inputs from N, and the report names it and the file's hash.
run check 01 --seed 18446744073709551615 --report "$T/seeded.json"
[ "$rc" -eq 0 ] && grep -q '"seed": "18446744073709551615"' "$T/seeded.json" \
  && grep -Eq '"sha256": "[0-9a-f]{64}"' "$T/seeded.json" || fail "check 01 --seed: exit $rc: $(cat "$T/seeded.json")"
for bad in 18446744073709551616 -1 abc; do
  run check 01 --seed "$bad"
  [ "$rc" -eq 2 ] || fail "check 01 --seed $bad: exit $rc, expected 2 ($out)"
done
echo "ok: --seed N reaches the grader and the report; a seed past 2^64-1 is refused"

# 4. All chapters: one table, and the report.
run check all --report "$T/report.json" --name 'Ada "A." Lovelace'
[ "$rc" -eq 1 ] || fail "check all: exit $rc, expected 1 (not all passed): $out"
printf '%s\n' "$out"
[[ "$out" == *"01"*"the alpha exercise"*"passed"* ]] || fail "table row 01"
[[ "$out" == *"02"*"the beta exercise"*"not yet"* ]] || fail "table row 02"
[[ "$out" == *"03"*"the gamma exercise"*"does not compile"* ]] || fail "table row 03"
[[ "$out" == *"05"*"the epsilon exercise"*"grader crashed"* ]] || fail "table row 05"
[[ "$out" == *"12"*"the delta exercise"*"not yet"*"0/$checks"* ]] || fail "table row 12"
[[ "$out" != *"Segmentation fault"* ]] || fail "check all shows the shell's message: $out"
"$REPORT_CHECK" "$T/report.json" 'Ada "A." Lovelace' || fail "the report"
echo "ok: check all --report"

# 5. Bad arguments: one line, exit 2.
mkdir "$T/a_folder"
for args in "check" "check 01 --frobnicate" "check 01 02" "check all --hint" "check 01 --report $T/no/such/dir/r.json" \
            "check 01 --name" "check 01 --report $T/a_folder"; do
  run $args
  [ "$rc" -eq 2 ] || fail "'lab $args': exit $rc, expected 2 ($out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "'lab $args' printed more than one line: $out"
done
[ -z "$(ls -A "$T/a_folder")" ] || fail "--report FOLDER left files in it: $(ls -A "$T/a_folder")"
run check all --report "$T/bad_name.json" --name "$(printf 'Ad\377a')"
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "--name with a byte that is not UTF-8: exit $rc: $out"
[ ! -e "$T/bad_name.json" ] || fail "--name that is not UTF-8 still wrote a report"
echo "ok: bad arguments exit 2 with one line ($out)"
