#!/bin/sh
# lesson_13.sh CASE MPIEXEC LESSON_13 SCRATCH — chapter 13's program under `mpiexec -n 2`.
#   checks   the equality checks print what the chapter promises: DP in rank order and
#            ZeRO-1 bit-identical, the ranks skipping together, the RESULT line
#   killed   rank 1 is killed (SIGKILL) in epoch 2: the job ends with an error naming rank 1,
#            and the checkpoint rank 0 wrote after epoch 1 is whole: a run resumes from it
#   throws   rank 1 throws in epoch 1: every rank stops, with one line naming rank 1 and why
# MPIEXEC is the launcher with its flags (a quoted string); runs happen in SCRATCH.
what="$1"; mpiexec="$2"; lesson="$3"; scratch="$4"
mkdir -p "$scratch" && cd "$scratch" || exit 1
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
    ;;
  throws)
    out=$($mpiexec -n 2 "$lesson" $small --check-steps 0 --epochs 1 --fail-rank 1 --fail-at-step 2 2>&1); rc=$?
    printf '%s\n' "$out"
    [ "$rc" -ne 0 ] || fail "the job ended with exit code 0 although rank 1 failed"
    need "^lesson_13: rank 1 of 2: failing on purpose at step 2 \(--fail-at-step\)$"
    printf '%s\n' "$out" | grep -q "epoch 1 " && fail "training went on after rank 1 failed"
    ;;
  *) fail "unknown case '$what'" ;;
esac
echo "lesson_13.sh $what: ok"
