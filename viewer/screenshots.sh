#!/usr/bin/env bash
# Regenerates the viewer pictures in docs/images/ (used by ./lab screenshots).
# Usage: viewer/screenshots.sh BUILD_DIR
# The runs pictured are SYNTHETIC DEMO DATA written by --make-demo-runs (the pictures say so);
# they show what the panels draw, not results of training.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
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
ls -l "$OUT"/viewer_*.png
