#!/bin/sh
# lesson_13.sh CASE MPIEXEC LESSON_13 SCRATCH REFERENCE — chapter 13's program under `mpiexec`
# (2 ranks unless a case says otherwise; REFERENCE is tests/dist/rank_order_reference).
#   checks   the equality checks print what the chapter promises: DP in rank order and
#            ZeRO-1 bit-identical, the ranks skipping together, the RESULT line and its
#            times in order (mean time outside MPI <= the slowest rank's <= the step)
#   killed   rank 1 is killed (SIGKILL) in epoch 2: the job ends with an error naming rank 1,
#            and the checkpoint rank 0 wrote after epoch 1 is whole: a run resumes from it
#   throws   rank 1 throws in epoch 1: every rank stops, with one line naming rank 1 and why
#   folders  runs/<name>/rank<k>/ per rank; a second run with the same name is refused (exit 2)
#            on every rank, and runs with --overwrite
#   diverges an lr of 1e30 makes the weights inf: every rank stops at the same step, exit 3
#   gpt      --model gpt (chapter 12's GPT, tiny): the equality checks bit-identical, the
#            accountant's optimizer state = the formula on both ranks, a validation loss below
#            the uniform one; then ZeRO-1 with --grad-accum 2 and F16 autocast
#   bad_data a data folder without FashionMNIST, a damaged FashionMNIST, an empty or a damaged
#            (not UTF-8) --text and (without a GPU) --device cuda: one line from rank 0, every
#            rank exits (1 for data, 2 for the device) before any work, and MPI_Abort is
#            not needed; --device auto without a GPU: the CPU on every rank, said once
#   rank_order  --deterministic at 2, 3 and 4 ranks equals one process adding the ranks'
#            gradients in rank order by hand (REFERENCE, no communicator), read from the
#            saved checkpoints; at 3 and 4 ranks --zero equals DP's AdamW, checkpoint for
#            checkpoint; a --zero checkpoint resumes and ends where uninterrupted training does
#   flags_differ  `mpiexec A : B`, the ranks given different command lines (another --epochs,
#            an unknown flag, another --lr, another --run-name): refused at start on every
#            rank, said once, exit 2, no folder written
# (killed also resumes with a contradicting --seed: refused, exit 2, naming the saved value)
# MPIEXEC is the launcher with its flags (a quoted string); runs happen in SCRATCH, and are
# removed when the case ends, passed or not.
what="$1"; mpiexec="$2"; lesson="$3"; scratch="$4"; reference="$5"
mkdir -p "$scratch" && cd "$scratch" || exit 1
trap 'cd / && rm -rf "$scratch"' EXIT
rm -rf runs  # each case starts without run folders (runs/<name> that exists is refused)
small="--limit-train 512 --limit-test 200 --ring-mb 0.25 --threads 1"
fail() { echo "FAILED: $1"; exit 1; }
need() { printf '%s\n' "$out" | grep -Eq -- "$1" || fail "the output has no line matching: $1"; }

case "$what" in
  checks)
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 3 --epochs 1 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    need "ring: 2 steps, this rank sent [0-9]+ bytes = 1\.000 x the buffer"
    need "ring = MPI_Allreduce on small integers \(exact sums\): yes"
    need "DP, MPI's allreduce +bit-identical"
    need "DP, rank order +bit-identical"
    need "ZeRO-1 +bit-identical"
    need "rank 0: +step/65536 +step/65536 +SKIP/32768 +step/32768"
    need "rank 1: +step/65536 +step/65536 +SKIP/32768 +step/32768"
    need "by columns .*bit-identical"
    need "RESULT model=mlp ranks=2 threads=1 precision=fp32 zero=0 steps=4 "
    # the wait for the slowest rank: the ranks' mean time outside MPI <= the slowest rank's
    # (lap by lap) <= the step (5% for the clocks of two processes)
    need "^  a step, [0-9.]+ ms: each rank computes [0-9.]+ ms on average \(outside MPI\)"
    printf '%s\n' "$out" | awk '/^RESULT/ { for (i = 1; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] } }
      END { exit !(v["compute_ms"] > 0 && v["slowest_ms"] >= v["compute_ms"] && v["slowest_ms"] <= 1.05 * v["step_ms"]) }' ||
      fail "RESULT's compute_ms, slowest_ms and step_ms are not in that order"
    ;;
  killed)
    rm -f ckpt.bin ckpt.bin.tmp.*
    # 4 steps an epoch; rank 1 dies at step 5, in epoch 2, after epoch 1's checkpoint.
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 2 --checkpoint ckpt.bin \
          --fail-rank 1 --fail-at-step 5 --fail-how kill 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -ne 0 ] || fail "the job ended with exit code 0 although rank 1 was killed"
    need "rank 1 .*(signal 9|Killed)"
    [ -f ckpt.bin ] || fail "no checkpoint: epoch 1 ended before the kill"
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 2 --resume ckpt.bin 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "resuming from the checkpoint failed (exit code $rc)"
    need "resumed from ckpt.bin: epoch 2, step 4"
    need "epoch 2 +loss"
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 3 --resume ckpt.bin --seed 7 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 2 ] || fail "resuming with another --seed: exit code $rc, expected 2"
    need "^lesson_13: --resume ckpt.bin: the checkpoint was trained with --seed 0, not 7"
    ;;
  folders)
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --run-name twice 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    for k in 0 1; do
      [ -s runs/twice/rank$k/events.jsonl ] || fail "runs/twice/rank$k/events.jsonl is missing or empty"
      grep -q '"world_size": *2' runs/twice/rank$k/run.json || fail "runs/twice/rank$k/run.json has no world_size 2"
    done
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --run-name twice 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 2 ] || fail "a second run into runs/twice: exit code $rc, expected 2"
    need "^lesson_13: runs/twice already exists"
    [ "$(printf '%s\n' "$out" | grep -c 'runs/twice')" -eq 1 ] || fail "the refusal is not said exactly once"
    printf '%s\n' "$out" | grep -q "== 1\." && fail "the refused run started working"
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --run-name twice --overwrite 2>&1); rc=$?
    [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "--overwrite: exit code $rc"; }
    ;;
  diverges)
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --lr 1e30 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3 (diverged)"
    need "^lesson_13: mlp, rank 0 diverged at step [0-9]+"
    need "^lesson_13: mlp, rank 1 diverged at step [0-9]+"
    grep -q '"status": *"diverged"' runs/13_mlp_2ranks/rank1/run.json || fail "rank 1's run.json does not say diverged"
    ;;
  throws)
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --fail-rank 1 --fail-at-step 2 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -ne 0 ] || fail "the job ended with exit code 0 although rank 1 failed"
    need "^lesson_13: rank 1 of 2: failing on purpose at step 2 \(--fail-at-step\)$"
    printf '%s\n' "$out" | grep -q "epoch 1 " && fail "training went on after rank 1 failed"
    ;;
  bad_data)
    # one line, from rank 0; nothing printed by section 1; no MPI_Abort
    once() {
      [ "$rc" -eq "$1" ] || fail "$2: exit code $rc, expected $1"
      need "^lesson_13: $3"
      [ "$(printf '%s\n' "$out" | grep -c '^lesson_13:')" -eq 1 ] || fail "$2: not said exactly once"
      printf '%s\n' "$out" | grep -q "== 1\." && fail "$2: the job started working"
      printf '%s\n' "$out" | grep -q "MPI_ABORT" && fail "$2: the ranks were aborted rather than stopped"
      return 0
    }
    rm -rf nodata damaged && mkdir -p nodata damaged
    out=$($mpiexec -n 2 "$lesson" $small --data nodata 2>&1); rc=$?
    printf '%s\n' "$out"
    once 1 "--data nodata" "FashionMNIST not found: .* in nodata"
    # the real dataset with its training images cut short
    src="${HG_DATA:-/usr/share/datasets/fashion-mnist}"  # where the chapters look (datasets/paths.h)
    if [ -f "$src/train-images-idx3-ubyte.gz" ]; then
      cp "$src"/t10k-* "$src"/train-labels-* damaged/
      head -c 100000 "$src"/train-images-idx3-ubyte.gz > damaged/train-images-idx3-ubyte.gz
      out=$($mpiexec -n 2 "$lesson" $small --data damaged 2>&1); rc=$?
      printf '%s\n' "$out"
      once 1 "--data damaged" ".*train-images-idx3-ubyte"
    else
      echo "no $src/train-images-idx3-ubyte.gz to damage a copy of: that part not run"
    fi
    : > empty.txt
    out=$($mpiexec -n 2 "$lesson" --model gpt --threads 1 --text empty.txt 2>&1); rc=$?
    printf '%s\n' "$out"
    once 1 "--text empty.txt" "text file empty.txt is empty"
    printf 'a fortune\n\377\376 cut short' > damaged.txt  # not UTF-8: data, exit 1, as a damaged FashionMNIST
    out=$($mpiexec -n 2 "$lesson" --model gpt --threads 1 --text damaged.txt 2>&1); rc=$?
    printf '%s\n' "$out"
    once 1 "--text damaged.txt" "text file damaged.txt is not UTF-8 text"
    out=$($mpiexec -n 2 "$lesson" $small --device cuda 2>&1); rc=$?
    printf '%s\n' "$out"
    if [ "$rc" -ne 0 ]; then once 2 "--device cuda" "--device cuda: "; else echo "--device cuda ran: this machine has GPUs"; fi
    # --device auto: every rank on the same device; the CPU fallback said once, by rank 0
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --device auto --run-name auto 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "--device auto: exit code $rc"
    said=$(printf '%s\n' "$out" | grep -c '^--device auto:')
    [ "$said" -le 1 ] || fail "--device auto: the fallback to the CPU said $said times"
    command -v nvidia-smi >/dev/null || [ "$said" -eq 1 ] || fail "--device auto without a GPU: no line says the CPU is used"
    ;;
  gpt)
    g="--model gpt --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 --steps 20 --ring-mb 0.25 --threads 1"
    # 7 sequences a global batch: 4 on rank 0, 3 on rank 1, the losses weighted
    out=$($mpiexec -n 2 "$lesson" $g --check-steps 3 --batch-size 7 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    need "checked: 2 rank\(s\) against one process \(gpt, 3 steps"
    need "DP, MPI's allreduce +bit-identical"
    need "DP, rank order +bit-identical"
    need "ZeRO-1 +bit-identical"
    need "rank 1: +step/65536 +step/65536 +SKIP/32768 +step/32768"
    need "section 3, ZeRO-1 AdamW: master, m, v +([0-9]+) +\1 +\1 +12 ceil\(Psi/N\)"
    need "section 4, DP AdamW: m and v +([0-9]+) +\1 +\1 +8 Psi"
    need "measured = formula on every rank: yes"
    need "^RESULT model=gpt ranks=2 threads=1 precision=fp32 zero=0 steps=20 .* val_loss=[0-9.]+$"
    printf '%s\n' "$out" | awk '/validation loss/ { v = $3; u = $NF } END { exit !(v > 0 && v < u) }' ||
      fail "the validation loss is not below the uniform loss ln V"
    out=$($mpiexec -n 2 "$lesson" $g --check-steps 0 --zero --grad-accum 2 --precision amp_f16 --run-name gz 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "--zero --grad-accum 2 --precision amp_f16: exit code $rc"
    need "global batch 16 sequences x 16 tokens in 2 micro-batches of 8 \(4 per rank\), 20 steps, ZeRO-1 AdamW"
    need "section 4, ZeRO-1 AdamW: master, m, v +([0-9]+) +\1 +\1 +12 ceil\(Psi/N\)"
    need "measured = formula on every rank: yes"
    need "^RESULT model=gpt ranks=2 threads=1 precision=amp_f16 zero=1 steps=20 "
    [ -s runs/gz/rank1/events.jsonl ] || fail "runs/gz/rank1/events.jsonl is missing or empty"
    ;;
  rank_order)
    # 3 global batches of 64 an epoch: 32, 21 or 16 examples per rank
    t="--limit-train 192 --limit-test 100 --ring-mb 0.01 --threads 1 --check-steps 0 --batch-size 64 --seed 3"
    sgd="--lr 0.05 --momentum 0.9 --weight-decay 0.01"
    adamw="--lr 0.001 --momentum 0.9 --weight-decay 0.01"
    lesson13() {  # RANKS RUN-NAME FLAGS...
      n=$1; name=$2; shift 2
      out=$($mpiexec -n "$n" "$lesson" $t --deterministic --run-name "$name" "$@" 2>&1); rc=$?
      [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "$n ranks, $*: exit code $rc"; }
      printf '%s\n' "$out" | grep -q "rank-order sums" || fail "$n ranks, $*: section 4 does not say rank-order sums"
    }
    against() {  # what is wrong if it differs, then rank_order_reference's arguments
      wrong=$1; shift
      "$reference" "$@" || fail "$wrong"
    }
    lesson13 2 d2 --optimizer sgd $sgd --epochs 1 --checkpoint d2.bin
    against "2 ranks, SGD: the checkpoint is not one process's rank-order training" \
      train d2.bin 2 --optimizer sgd $sgd --epochs 1 --batch-size 64 --seed 3 --limit-train 192
    for n in 3 4; do
      lesson13 $n a$n --optimizer adamw $adamw --epochs 1 --checkpoint a$n.bin
      against "$n ranks, AdamW: the checkpoint is not one process's rank-order training" \
        train a$n.bin $n --optimizer adamw $adamw --epochs 1 --batch-size 64 --seed 3 --limit-train 192
      lesson13 $n z$n --zero $adamw --epochs 1 --checkpoint z$n.bin
      against "$n ranks: the --zero checkpoint differs from DP's AdamW" same z$n.bin a$n.bin
    done
    # ZeRO-1's checkpoint resumes (at 3 ranks, for a second epoch) where training would be
    lesson13 3 z3 --zero $adamw --epochs 2 --resume z3.bin --checkpoint z3e2.bin
    need "resumed from z3.bin: epoch 2, step 3"
    against "the resumed --zero run is not where 2 epochs of rank-order training are" \
      train z3e2.bin 3 --optimizer adamw $adamw --epochs 2 --batch-size 64 --seed 3 --limit-train 192
    ;;
  flags_differ)
    # one rank with the first command line, the other with the second; a hang fails at 60 s
    base="$small --check-steps 0 --epochs 1 --run-name same"
    for other in "--epochs 2" "--no-such-flag" "--lr 0.01" "--run-name other"; do
      out=$(timeout 60 $mpiexec -n 1 "$lesson" $base : -n 1 "$lesson" $base $other 2>&1); rc=$?
      printf '%s\n' "$out"
      [ "$rc" -eq 2 ] || fail "rank 1 with $other: exit code $rc, expected 2"
      need "^lesson_13: rank 1 was started with another command line than rank 0"
      [ "$(printf '%s\n' "$out" | grep -c '^lesson_13:')" -eq 1 ] || fail "rank 1 with $other: not said exactly once"
      printf '%s\n' "$out" | grep -q "== 1\." && fail "rank 1 with $other: the job started working"
      [ ! -e runs/same ] && [ ! -e runs/other ] || fail "rank 1 with $other: a run folder was written"
    done
    ;;
  *) fail "unknown case '$what'" ;;
esac
echo "lesson_13.sh $what: ok"
