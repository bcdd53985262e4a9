#!/bin/sh
# tour_test.sh BUILD_DIR SOURCE_DIR — lessons/tour.sh, the first thing `./lab run` shows, end to
# end on a small slice (300 training images): part 1 is chapter 04's formats table and nothing
# else, part 2 trains the four precisions, says where BF16 runs on this CPU and prints the
# comparison with FP32 at x1.00, "all"
# is the two in that order, and an unknown part is a usage error (exit 2).
build="$1"; src="$2"
tour="$src/lessons/tour.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

HG_TOUR_LIMIT=300 bash "$tour" "$build" formats >formats.txt 2>&1 || fail "part 'formats' exited $?: $(tail -3 formats.txt)"
head -1 formats.txt | grep -q "^halfgrad tour, part 1: the number formats" || fail "part 1 starts with: $(head -1 formats.txt)"
grep -q "^FP16  *16  *5  *10  *15  *65504" formats.txt || fail "part 1 has no FP16 row in the formats table"
grep -q "epoch 1" formats.txt && fail "part 1 trained something"

HG_TOUR_LIMIT=300 bash "$tour" "$build" training >training.txt 2>&1 || fail "part 'training' exited $?: $(tail -5 training.txt)"
head -1 training.txt | grep -q "^halfgrad tour, part 2: one MLP, one epoch on the first 300" || fail "part 2 starts with: $(head -1 training.txt)"
for p in fp32 amp_f16 amp_bf16 fp16_naive; do
  grep -Eq "^  $p +test accuracy 0\.[0-9]{4} +[0-9.]+ s/epoch +x[0-9.]+ FP32$" training.txt || fail "no comparison row for $p"
done
grep -Eq "^  fp32 .* x1\.00 FP32$" training.txt || fail "FP32's row is not x1.00"
grep -q "^on the CPU: .*BF16" training.txt || fail "part 2 does not say where BF16 runs on this CPU"
[ -d runs/tour_mlp_fp32 ] && [ -d runs/tour_mlp_amp_f16 ] && [ -d runs/tour_mlp_amp_bf16 ] && [ -d runs/tour_mlp_fp16_naive ] || fail "run folders missing: $(ls runs)"

HG_TOUR_LIMIT=300 bash "$tour" "$build" all >all.txt 2>&1 || fail "part 'all' exited $?"
first2=$(grep -n "^halfgrad tour, part 2" all.txt | cut -d: -f1)
last1=$(grep -n "^FP16  *16" all.txt | cut -d: -f1)
[ -n "$first2" ] && [ -n "$last1" ] && [ "$last1" -lt "$first2" ] || fail "'all' is not part 1 then part 2"

bash "$tour" "$build" everything >bad.txt 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "an unknown part exited $rc, expected 2"
grep -q "unknown part 'everything'" bad.txt || fail "an unknown part says: $(cat bad.txt)"
echo "tour: both parts and 'all' print what ./lab run shows"
