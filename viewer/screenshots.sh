#!/usr/bin/env bash
# The viewer pictures of docs/viewer.md and the README, from real runs (./lab screenshots).
# Usage: viewer/screenshots.sh BUILD_DIR [OUT_DIR]
# OUT_DIR defaults to BUILD_DIR/screenshots, so a learner's git status stays clean;
# `./lab screenshots --update-docs` passes docs/images to replace the committed pictures.
#
# The Gradients, Loss-scale, Runs, ranks, Memory and FP8 pictures are of REAL runs: chapters
# 06, 08, 09, 10, 13 and 14 train the MLP briefly on a slice of FashionMNIST, chapter 12 its GPT
# for 40 steps (the commands are below; together well under a minute on an idle 2-core
# machine). Two pictures stay SYNTHETIC DEMO DATA (--make-demo-runs, labelled in red on the
# picture) because no short real run shows what they show: gradients that underflow FP16 (the
# MLP's sit above 2^-24), and PyTorch's growth interval of 2000 steps over thousands of steps.
# The Lab pictures are of live runs the viewer starts itself (section 4).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
V="$BUILD/viewer/halfgrad-viewer"
L="$BUILD/lessons"
OUT="${2:-$BUILD/screenshots}"
[ -x "$V" ] || { echo "screenshots: $V is missing (build with the viewer: see ./lab build)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: xvfb-run is missing (apt-get install xvfb xauth)" >&2; exit 1; }
for n in 06 08 09 10 12 14; do
  [ -x "$L/lesson_$n" ] || { echo "screenshots: $L/lesson_$n is missing (./lab build builds it)" >&2; exit 1; }
done
mkdir -p "$OUT"
shot() { xvfb-run -a -s '-screen 0 1280x800x24' "$V" "$@"; }
export OMP_WAIT_POLICY=PASSIVE  # the machine is shared: idle threads must not spin

# ---- 1. real runs (each chapter writes runs/<run-name>_<precision>/) ----------------------
REAL="$BUILD/screenshot_runs"
rm -rf "$REAL"; mkdir -p "$REAL"
RUNS="$REAL/runs"
real() { (cd "$REAL" && "$@" --threads 2 --limit-test 2000 --stats-every 5 | grep '^RESULT'); }
# Chapter 09: the dynamic loss scale, with a growth interval of 20 so 200 steps show the teeth.
real "$L/lesson_09" --runs dynamic_scale --limit-train 12800 --epochs 2 --growth-interval 20 --run-name shot
# Chapter 08: a static scale of 1024 (a flat line).
real "$L/lesson_08" --runs static_scale --loss-scale 1024 --limit-train 12800 --epochs 2 --run-name shot_s1024
# Chapter 10: autocast with GradScaler's defaults (2^16, x2 after 2000 steps), and its FP32 twin.
real "$L/lesson_10" --runs fp32,amp_f16 --limit-train 12800 --epochs 2 --run-name shot
# Chapter 06: naive FP16 with small steps, where most weight updates round away.
real "$L/lesson_06" --only fp16 --lr 0.001 --momentum 0 --limit-train 5000 --epochs 2 --run-name shot_lr0.001
# Chapter 14: FP8 with delayed scaling (amax history 16), 60 steps of 32 images; it prints no
# RESULT line, so its table row is shown. In a folder of its own: the Loss-scale and Runs
# pictures list every run they find, and their runs keep their colours.
mkdir -p "$REAL/fp8"
(cd "$REAL/fp8" && "$L/lesson_14" --sections train --runs delayed --limit-train 1920 --batch-size 32 \
   --limit-test 500 --threads 2 --run-name shot | grep -E '^(run|delayed) ')

# Chapter 12: the GPT's memory events, the README's 40 steps ("Where the memory goes"). A given
# peak (--peak-gflops, which only sets the MFU it prints) and no sample save the seconds of
# measuring the machine and of generating text; the memory events are the same bits. In a
# folder of its own, as chapter 14's.
mkdir -p "$REAL/gpt"
(cd "$REAL/gpt" && "$L/lesson_12" --steps 40 --warmup 10 --eval-every 40 --threads 2 --peak-gflops 300 \
   --sample-chars 0 | grep -E '^(memory on|RESULT)')

# Chapter 13 (an MPI build): two ranks, each logging its own runs/shot_13/rank<k>/, three
# epochs of 10000 images; the Loss-scale panel overlays the ranks' losses. In a folder of its
# own, as chapter 14's.
have_13=0
if [ -x "$L/lesson_13" ] && command -v mpirun >/dev/null; then
  have_13=1
  [ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mkdir -p "$REAL/dp"
  (cd "$REAL/dp" && OMPI_MCA_mpi_yield_when_idle=1 mpirun -np 2 --oversubscribe "$L/lesson_13" --threads 1 \
     --epochs 3 --check-steps 0 --ring-mb 0.1 --run-name shot_13 | grep '^RESULT')
else
  echo "screenshots: no lesson_13 or no mpirun (a build without MPI): viewer_ranks.png is not made" >&2
fi

# The viewer runs in $REAL, so the pictures show the run folders as runs/<name>.
rshot() { (cd "$REAL" && shot "$@"); }
rshot --screenshot "$OUT/viewer_gradients_fp16_naive.png" --panel gradients \
      --run runs/shot_lr0.001_fp16_naive --param fc1.weight --step 75 --per-layer lost-updates --size 1280x800
rshot --screenshot "$OUT/viewer_gradients_dynamic.png" --panel gradients \
      --run runs/shot_dynamic_scale --param fc1.weight --step 100 --size 1280x800
rshot --screenshot "$OUT/viewer_gradients_dynamic_true.png" --panel gradients \
      --run runs/shot_dynamic_scale --param fc1.weight --step 105 --heat-true --size 1280x800
rshot --screenshot "$OUT/viewer_scale.png" --panel scale runs --run runs/shot_dynamic_scale \
      --run runs/shot_s1024_static_scale --run runs/shot_amp_f16 --run runs/shot_fp32 --size 1280x800
rshot --screenshot "$OUT/viewer_runs.png" --panel runs runs --run runs/shot_dynamic_scale --size 1280x800
[ "$have_13" -eq 0 ] || (cd "$REAL/dp" && shot --screenshot "$OUT/viewer_ranks.png" --panel scale runs/shot_13 --size 1280x800)
(cd "$REAL/fp8" && shot --screenshot "$OUT/viewer_fp8_delayed.png" --panel fp8 --run runs/shot_delayed \
                       --tensor fc1.dy --size 1280x800)
(cd "$REAL/gpt" && shot --screenshot "$OUT/viewer_memory.png" --panel memory --run runs/12_gpt_fp32 --size 1280x800)

# ---- 2. the Bits panel (no run needed) --------------------------------------------------
shot --screenshot "$OUT/viewer_bits.png"      --panel bits --value 0.1 --size 1280x800
shot --screenshot "$OUT/viewer_bits_fp16.png" --panel bits --value 1e-5 --format fp16 --size 1280x800

# ---- 3. SYNTHETIC demo runs, only for what the short real runs cannot show ---------------
DEMO="$BUILD/demo_runs"
rm -rf "$DEMO"
"$V" --make-demo-runs "$DEMO" --demo-steps 6000
shot --screenshot "$OUT/viewer_gradients_demo_underflow.png" --panel gradients \
     --run "$DEMO/demo_fp16_naive" --param conv1.weight --step 5000 --size 1280x800
shot --screenshot "$OUT/viewer_scale_demo.png" --panel scale "$DEMO" --size 1280x800
# ---- 4. the Lab panel: live runs the viewer starts and drives with a script -------------
# Each viewer starts halfgrad-live in runs/lab_1 of a folder of its own, runs the script, then
# takes the picture (of a run that ended, or, with --lab-wait, of one paused at the script's
# last line).
LAB="$BUILD/lab_runs"
rm -rf "$LAB"
lshot() { local dir="$LAB/$1"; shift; mkdir -p "$dir"; (cd "$dir" && shot "$@" 2>/dev/null | { grep -v "^wrote" || true; }); }
printf 'at 0 set recipe master_weights\nat 60 set recipe static_scale; at 60 set loss_scale 2^-12\nat 125 pause\n' \
  > "$BUILD/lab_paused.txt"
lshot paused --script "$BUILD/lab_paused.txt" --panel lab --param fc2.weight --lab-wait 8 \
      --screenshot "$OUT/viewer_lab.png" --size 1280x800
lshot presenter --script "$ROOT/docs/demos/09_dynamic_scale.txt" --presenter --panel scale --ui-scale 1.5 \
      --screenshot "$OUT/viewer_lab_presenter.png" --size 1280x800
lshot branch --script "$ROOT/docs/demos/07_lost_updates.txt" --presenter --panel scale \
      --screenshot "$OUT/viewer_lab_branch.png" --size 1280x800
ls -l "$OUT"/viewer_*.png
