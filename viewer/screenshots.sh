#!/usr/bin/env bash
# Regenerates the viewer pictures in docs/images/ (used by ./lab screenshots).
# Usage: viewer/screenshots.sh BUILD_DIR
# The runs pictured are SYNTHETIC DEMO DATA written by --make-demo-runs (the pictures say so);
# they show what the panels draw, not results of training.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
V="$BUILD/viewer/halfgrad-viewer"
OUT="$ROOT/docs/images"
[ -x "$V" ] || { echo "screenshots: $V is missing (build with the viewer: see ./lab build)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: xvfb-run is missing (apt-get install xvfb xauth)" >&2; exit 1; }

RUNS="$BUILD/demo_runs"
rm -rf "$RUNS"
"$V" --make-demo-runs "$RUNS" --demo-steps 6000
mkdir -p "$OUT"
shot() { xvfb-run -a -s '-screen 0 1280x800x24' "$V" "$@"; }

shot --screenshot "$OUT/viewer_bits.png"      --panel bits --value 0.1 --size 1280x800
shot --screenshot "$OUT/viewer_bits_fp16.png" --panel bits --value 1e-5 --format fp16 --size 1280x800
shot --screenshot "$OUT/viewer_gradients_fp16_naive.png" --panel gradients \
     --run "$RUNS/demo_fp16_naive" --param conv1.weight --step 5000 --size 1280x800
shot --screenshot "$OUT/viewer_gradients_dynamic.png" --panel gradients \
     --run "$RUNS/demo_dynamic_scale" --param conv1.weight --step 5000 --size 1280x800
shot --screenshot "$OUT/viewer_scale.png" --panel scale "$RUNS" --size 1280x800
shot --screenshot "$OUT/viewer_runs.png"  --panel runs --run "$RUNS/demo_dynamic_scale" "$RUNS" --size 1280x800
# A real run as well: chapter 02's MLP, briefly (a few seconds on 2 cores), when it is built.
L02="$BUILD/lessons/lesson_02"
if [ -x "$L02" ]; then
  REAL="$BUILD/real_runs"; rm -rf "$REAL"; mkdir -p "$REAL"
  (cd "$REAL" && "$L02" --model mlp --epochs 4 --limit-train 12000 --limit-test 2000 --threads 1 \
     --run-name 02_mlp_fp32_small | grep '^RESULT')
  shot --screenshot "$OUT/viewer_scale_real_mlp.png" --panel scale "$REAL/runs" --size 1280x600
else
  echo "screenshots: $L02 not built: skipping the picture of a real run" >&2
fi
ls -l "$OUT"/viewer_*.png
