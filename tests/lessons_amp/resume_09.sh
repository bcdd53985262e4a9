#!/bin/sh
# resume_09.sh LESSON_09 — chapter 09 stopped after epoch 1 and resumed for epoch 2 ends in
# the same checkpoint, byte for byte, as the run of 2 epochs that never stopped (the
# GradScaler's scale and growth counter included).
set -e
L="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
A="--limit-train 512 --limit-test 100 --growth-interval 3 --threads 1 --stats-every 0"
"$L" $A --epochs 2 --checkpoint straight.ckpt --run-name straight >straight.txt
"$L" $A --epochs 1 --checkpoint half.ckpt --run-name part >half.txt
"$L" $A --epochs 2 --resume half.ckpt --checkpoint resumed.ckpt --run-name part >resumed.txt
grep -q "resumed from half.ckpt: step 4" resumed.txt || { cat resumed.txt; echo "no resume line"; exit 1; }
cmp straight.ckpt resumed.ckpt || { echo "the resumed run departs from the uninterrupted one"; exit 1; }
grep RESULT straight.txt resumed.txt
