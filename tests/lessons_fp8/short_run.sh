#!/bin/sh
# short_run.sh LESSON_14 SCRATCH — every section of chapter 14 on 256 training images: the
# sections print, the FP8 run writes fp8_scale events for x, w and dy of every layer, and
# the table has a gap against BF16.
set -e
lesson="$1"; scratch="$2"
rm -rf "$scratch"; mkdir -p "$scratch"; cd "$scratch"
"$lesson" --limit-train 256 --limit-test 100 --runs bf16,delayed --run-name t > out.txt 2>&1 \
  || { cat out.txt; echo "short_run: lesson_14 failed"; exit 1; }
cat out.txt
for want in "== 1. the formats ==" "== 3. the recipes" "16384" "gap vs BF16" "delayed "; do
  grep -q -- "$want" out.txt || { echo "short_run: the output lacks '$want'"; exit 1; }
done
events=runs/t_delayed/events.jsonl
for t in fc1.x fc1.w fc1.dy fc3.dy; do
  grep "\"tensor\":\"$t\"" "$events" | grep -q '"type":"fp8_scale"' \
    || { echo "short_run: no fp8_scale event for $t in $events"; exit 1; }
done
if grep -q '"fp8_scale"' runs/t_bf16/events.jsonl; then echo "short_run: the BF16 run logged FP8 scales"; exit 1; fi
echo "short_run: OK"
