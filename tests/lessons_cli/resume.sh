#!/bin/sh
# resume.sh LESSON NN — what --resume does with the flags a checkpoint decides (chapters 02
# and 09): one epoch is trained with non-default flags and checkpointed, then
#   - resuming the finished run says so and exits 0 (no report of an untrained epoch)
#   - a flag given with another value than the checkpoint's is refused: exit 2, one line
#     naming the flag and the checkpoint's value
#   - flags left out take the checkpoint's values, and run.json records those
L="$1"; nn="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
if [ "$nn" = 09 ]; then
  A="--limit-train 256 --limit-test 100 --threads 1 --stats-every 0"
  TRAINED="--lr 0.01 --batch-size 64 --seed 3 --growth-interval 3"
  DIR=runs/r_dynamic_scale
  OTHER="--growth-interval 5 3 --init-scale 1024 65536.0"  # flag, value given, checkpoint's
else
  A="--limit-train 256 --limit-test 100 --threads 1"
  TRAINED="--lr 0.01 --batch-size 64 --seed 3"
  DIR=runs/r
  OTHER="--model smallcnn mlp --momentum 0.5 0.9"  # flag, value given, checkpoint's
fi

"$L" $A $TRAINED --epochs 1 --checkpoint c.ckpt --run-name r >first.txt 2>&1 || { cat first.txt; fail "training failed"; }
[ -f c.ckpt ] || fail "no checkpoint"

# 1. the run is complete: nothing to train, no empty report
out=$("$L" $A --resume c.ckpt --run-name r 2>&1); rc=$?
echo "finished run: $out"
[ "$rc" -eq 0 ] || fail "resuming a finished run: exit code $rc, expected 0"
printf '%s\n' "$out" | grep -qF "all 1 epoch(s) of this run are done; nothing to train" || fail "it does not say the run is done"
printf '%s\n' "$out" | grep -q "accuracy\|RESULT" && fail "it reports on a run it did not train"

# 2. a flag that contradicts the checkpoint is refused, naming the checkpoint's value
check_refused() {  # ARGS...; $want: what the line must say after "trained with"
  out=$("$L" $A --epochs 2 --resume c.ckpt --run-name r "$@" 2>&1); rc=$?
  echo "$*: $out"
  [ "$rc" -eq 2 ] || fail "$*: exit code $rc, expected 2"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$*: expected one line"
  printf '%s\n' "$out" | grep -qF -- "the checkpoint was trained with $want" || fail "$*: expected '$want' in the line"
}
want="--lr 0.01, not 0.05"; check_refused --lr 0.05
want="--seed 3, not 4"; check_refused --seed 4
want="--batch-size 64, not 128"; check_refused --batch-size 128
want="--limit-train 256, not 200"; out=$("$L" --limit-train 200 --limit-test 100 --threads 1 --epochs 2 --resume c.ckpt --run-name r 2>&1)
echo "--limit-train 200: $out"; printf '%s\n' "$out" | grep -qF -- "$want" || fail "--limit-train: expected '$want'"
set -- $OTHER
while [ $# -ge 3 ]; do
  flag="$1" value="$2" saved="$3"; shift 3
  want="$flag $saved, not $value"; check_refused "$flag" "$value"
done

# 3. flags left out come from the checkpoint; the same value given is fine; run.json says what ran
"$L" $A --epochs 2 --resume c.ckpt --lr 0.01 --run-name r >resumed.txt 2>&1 || { cat resumed.txt; fail "the resumed run failed"; }
grep -q "resumed from c.ckpt" resumed.txt || { cat resumed.txt; fail "no resume line"; }
grep -q "^RESULT.* epochs=2" resumed.txt || { cat resumed.txt; fail "no RESULT of 2 epochs"; }
for kv in '"lr": 0.01' '"batch_size": 64' '"seed": 3' '"resume": "c.ckpt"'; do
  grep -qF "$kv" "$DIR/run.json" || { cat "$DIR/run.json"; fail "run.json does not record $kv"; }
done
echo "ok"
