#!/bin/sh
# diverged.sh LESSON_14 — chapter 14 with a learning rate of 1e30 (seconds): the MLP's weights
# turn inf/NaN within a few steps while the loss can stay finite (a ReLU turns NaN into 0,
# and the saturating casts clamp inf to ±448). The run must stop: one line on stderr saying
# where and why, the run folder marked "diverged", exit code 3. Its fp8_scale events count
# the infinities that a cast clamped: a tensor whose amax is inf has saturated values.
set -e
lesson="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
rc=0
"$lesson" --sections train --runs current --lr 1e30 --epochs 3 --limit-train 1024 --limit-test 100 \
  --threads 1 --run-name d >out.txt 2>err.txt || rc=$?
cat out.txt err.txt
[ $rc -eq 3 ] || { echo "diverged: expected exit code 3, got $rc"; exit 1; }
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "lesson_14: current diverged at step [0-9]*: " err.txt \
  || { echo "diverged: expected one line on stderr naming the run and the step"; exit 1; }
grep -q '"status":"diverged"' runs/d_current/events.jsonl && grep -q '"status": *"diverged"' runs/d_current/run.json \
  || { echo "diverged: the run log and run.json do not say status diverged"; exit 1; }
grep '"type":"fp8_scale"' runs/d_current/events.jsonl | grep '"amax":"inf"' >inf.txt \
  || { echo "diverged: no cast saw an inf (the test needs one)"; exit 1; }
if grep -q '"saturated":0[,}]' inf.txt; then
  grep '"saturated":0[,}]' inf.txt
  echo "diverged: a tensor holding inf was cast with no saturated value counted"
  exit 1
fi
echo "diverged: OK"
