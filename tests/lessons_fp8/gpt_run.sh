#!/bin/sh
# gpt_run.sh LESSON_14 SCRATCH — chapter 14's GPT table on a tiny GPT and a tiny text (seconds):
# a row for BF16 and each FP8 recipe with finite losses below the uniform guess, a finite gap
# of 0 for BF16 and under 0.5 nats for the recipes, a run folder per run, fp8_scale events for
# x, w and dy of every projection in the FP8 runs (E5M2 for dy), none in the BF16 run; and the
# flags of one model refused with the other.
set -e
lesson="$1"; scratch="$2"
rm -rf "$scratch"; mkdir -p "$scratch"; cd "$scratch"
i=0
while [ $i -lt 30 ]; do
  printf 'the cat sat on the mat. the dog sat on the log. a bird sang in the tree.\n' >>tiny.txt
  i=$((i + 1))
done
"$lesson" --sections train --model gpt --text tiny.txt --n-layer 1 --n-head 2 --n-embd 16 --block-size 8 \
  --batch-size 4 --steps 12 --lr 0.01 --eval-batches 2 --threads 1 --run-name g > out.txt 2>&1 \
  || { cat out.txt; echo "gpt_run: lesson_14 failed"; exit 1; }
cat out.txt
# uniform guess: ln V over the tiny text's characters
V=$(tr -d '\n' < tiny.txt | fold -w1 | sort -u | wc -l); V=$((V + 1))  # and the newline
awk -v V="$V" '
  $1 == "run" && $2 == "train" { table = 1; next }
  table && NF == 7 {
    rows++; name[$1] = 1
    if ($2 != $2 + 0 || $4 != $4 + 0 || $3 != $3 + 0 || $5 != $5 + 0) { print "gpt_run: a value is not a number: " $0; bad = 1 }
    if ($4 >= log(V)) { print "gpt_run: " $1 " validation loss " $4 " not below ln V = " log(V); bad = 1 }
    if ($1 == "bf16" && ($3 != 0 || $5 != 0)) { print "gpt_run: BF16 gap is not 0: " $0; bad = 1 }
    if ($1 != "bf16" && ($5 > 0.5 || $5 < -0.5)) { print "gpt_run: " $1 " validation gap " $5 " beyond 0.5"; bad = 1 }
  }
  END {
    if (rows != 5) { print "gpt_run: " rows + 0 " table rows, want 5"; bad = 1 }
    split("bf16 current delayed block mx", w, " ")
    for (i = 1; i <= 5; i++) if (!(w[i] in name)) { print "gpt_run: no row for " w[i]; bad = 1 }
    exit bad
  }' out.txt
for run in current delayed block mx; do
  events=runs/g_$run/events.jsonl
  [ -f runs/g_$run/run.json ] || { echo "gpt_run: no run.json in runs/g_$run"; exit 1; }
  for t in h.0.attn.c_attn h.0.attn.c_proj h.0.mlp.c_fc h.0.mlp.c_proj; do
    for role in x w dy; do
      grep '"type":"fp8_scale"' "$events" | grep -q "\"tensor\":\"$t.$role\"" \
        || { echo "gpt_run: no fp8_scale event for $t.$role in $events"; exit 1; }
    done
  done
  grep '"tensor":"h.0.mlp.c_fc.dy"' "$events" | grep -q '"format":"E5M2"' \
    || { echo "gpt_run: dy is not E5M2 in $events"; exit 1; }
  n=$(grep -c '"tensor":"h.0.attn.c_attn.x"' "$events")
  [ "$n" -eq 12 ] || { echo "gpt_run: $n events for h.0.attn.c_attn.x in $events, want one per step (12)"; exit 1; }
done
grep -q '"val/loss"' runs/g_bf16/events.jsonl || { echo "gpt_run: no val/loss in the BF16 run"; exit 1; }
if grep -q '"fp8_scale"' runs/g_bf16/events.jsonl; then echo "gpt_run: the BF16 run logged FP8 scales"; exit 1; fi
out=$("$lesson" --model gpt --epochs 2 2>&1) && { echo "gpt_run: --epochs with --model gpt was taken"; exit 1; }
echo "$out" | grep -q -- "--epochs belongs to --model mlp" || { echo "gpt_run: $out"; exit 1; }
out=$("$lesson" --steps 5 2>&1) && { echo "gpt_run: --steps with the mlp was taken"; exit 1; }
echo "$out" | grep -q -- "--steps belongs to --model gpt" || { echo "gpt_run: $out"; exit 1; }
echo "gpt_run: OK"
