#!/usr/bin/env bash
# Headless screenshots of the viewer under Xvfb, checked pixel by pixel by viewer_png_check.
# Usage: screenshots_test.sh VIEWER PNG_CHECK WORKDIR
# Exits 77 (ctest: skipped, never passed) when xvfb-run or the viewer is missing.
set -euo pipefail
viewer="${1:-}"; check="$2"; work="$3"

if [ -z "$viewer" ] || [ ! -x "$viewer" ]; then
  echo "SKIP: halfgrad-viewer was not built (libimgui-dev, libglfw3-dev or OpenGL missing)"; exit 77
fi
if ! command -v xvfb-run >/dev/null; then
  echo "SKIP: xvfb-run is not installed (apt-get install xvfb xauth)"; exit 77
fi

rm -rf "$work"; mkdir -p "$work"
shot() { xvfb-run -a -s '-screen 0 1280x800x24' "$viewer" "$@"; }

echo "== synthetic demo runs"
"$viewer" --make-demo-runs "$work/runs" --demo-steps 2000 --demo-modes fp32 dynamic_scale fp16_naive

echo "== no display: one line, non-zero exit"
set +e
msg=$(env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --screenshot "$work/x.png" 2>&1); rc=$?
set -e
echo "$msg (exit $rc)"
[ "$rc" -ne 0 ] || { echo "FAIL: exit 0 without a display"; exit 1; }
[ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || { echo "FAIL: more than one line"; exit 1; }
[ ! -e "$work/x.png" ] || { echo "FAIL: a PNG was written without a display"; exit 1; }

echo "== a bad flag value exits 2 with one line, before any work (no display needed to say so)"
# Each line: the flags. NaN passes a plain range check (every comparison with NaN is false).
while read -r -a flags; do
  set +e
  err=$(cd "$work" && env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" "${flags[@]}" 2>&1 >/dev/null); rc=$?
  set -e
  echo "${flags[*]}: $err (exit $rc)"
  [ "$rc" -eq 2 ] || { echo "FAIL: ${flags[*]} exited $rc, expected 2"; exit 1; }
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "FAIL: ${flags[*]}: more than one line"; exit 1; }
done <<'FLAGS'
--panel nope
--ui-scale nan
--ui-scale inf
--ui-scale -nan
--ui-scale 0
--ui-scale 9
--size 0x0
--size 99999x99999
--size 10x10
--size 1280
--step -5
--step 1e17
--measure-frames -1
--measure-frames 0
--demo-steps 0 --make-demo-runs demo
--demo-params 0 --make-demo-runs demo
--demo-hist-every 0 --make-demo-runs demo
--demo-live nan --make-demo-runs demo
--demo-modes nope --make-demo-runs demo
--tensor
--screenshot no_such_folder/x.png
--screenshot .
--layout-json x.json
no_such_runs_folder
FLAGS
[ ! -e "$work/demo" ] || { echo "FAIL: a bad flag still wrote demo runs"; exit 1; }

echo "== screenshots"
W=900; H=640
shot --screenshot "$work/bits_1.png" --panel bits --value 1 --format fp16 --size ${W}x${H} \
     --layout-json "$work/bits_1.json"
shot --screenshot "$work/bits_hex.png" --panel bits --value 0x3C00 --format fp16 --size ${W}x${H} \
     --layout-json "$work/bits_hex.json"
shot --screenshot "$work/bits_2.png" --panel bits --value -0.3 --format fp16 --size ${W}x${H} \
     --layout-json "$work/bits_2.json"
shot --screenshot "$work/gradients.png" --panel gradients --run "$work/runs/demo_dynamic_scale" --size ${W}x${H}
shot --screenshot "$work/scale.png" --panel scale "$work/runs" --size ${W}x${H}
shot --screenshot "$work/big.png" --panel bits --size 1000x700

for p in bits_1 bits_2 gradients scale; do
  "$check" size "$work/$p.png" $W $H
  "$check" notblank "$work/$p.png"
done
"$check" size "$work/big.png" 1000 700
"$check" differ "$work/bits_1.png" "$work/gradients.png"
"$check" differ "$work/bits_1.png" "$work/scale.png"
"$check" differ "$work/gradients.png" "$work/scale.png"
"$check" differ "$work/bits_1.png" "$work/bits_2.png"

echo "== 1.0 in FP16 is 0 01111 0000000000 (0x3C00): the boxes' colours"
"$check" bits "$work/bits_1.png" "$work/bits_1.json" fp16 5 10 3C00
echo "== -0.3 in FP16 rounds to 0xB4CD = 1 01101 0011001101"
"$check" bits "$work/bits_2.png" "$work/bits_2.json" fp16 5 10 B4CD
echo "== hex input 0x3C00 sets the same bits"
"$check" bits "$work/bits_hex.png" "$work/bits_hex.json" fp16 5 10 3C00
echo "== --ui-scale 2 doubles the bit boxes"
shot --screenshot "$work/bits_x2.png" --panel bits --value 1 --format fp16 --size 1280x800 \
     --ui-scale 2 --layout-json "$work/bits_x2.json"
"$check" boxscale "$work/bits_1.json" "$work/bits_x2.json" 2.0
"$check" bits "$work/bits_x2.png" "$work/bits_x2.json" fp16 5 10 3C00
echo "== the memory panel: the stack of the five categories, per run"
shot --screenshot "$work/memory.png" --panel memory --run "$work/runs/demo_fp32" --size ${W}x${H}
"$check" size "$work/memory.png" $W $H
"$check" notblank "$work/memory.png"
"$check" memory "$work/memory.png" 200
"$check" differ "$work/memory.png" "$work/scale.png"
shot --screenshot "$work/memory_f16.png" --panel memory --run "$work/runs/demo_dynamic_scale" --size ${W}x${H}
"$check" differ "$work/memory.png" "$work/memory_f16.png"
echo "== the FP8 panel: amax, scale and amax·scale against the format's max, per tensor"
# A synthetic delayed-scaling run, short enough that its steps are told apart (120 over ~600 px).
"$viewer" --make-demo-runs "$work/fp8runs" --demo-steps 120 --demo-modes fp8_delayed
fp8run="$work/fp8runs/demo_fp8_delayed"
shot --screenshot "$work/fp8.png" --panel fp8 --run "$fp8run" --tensor fc1.dy --size ${W}x${H} \
     --layout-json "$work/fp8.json"
"$check" size "$work/fp8.png" $W $H
"$check" notblank "$work/fp8.png"
"$check" fp8 "$work/fp8.png" "$work/fp8.json" 200
"$check" differ "$work/fp8.png" "$work/memory.png"
shot --screenshot "$work/fp8_x.png" --panel fp8 --run "$fp8run" --tensor fc1.x --size ${W}x${H}
"$check" differ "$work/fp8.png" "$work/fp8_x.png"
shot --screenshot "$work/fp8_two.png" --panel fp8 --run "$fp8run" --tensor fc1.dy --tensor fc2.w --size ${W}x${H}
"$check" differ "$work/fp8.png" "$work/fp8_two.png"
echo "== the FP8 panel on a run without fp8_scale events: no plot (its text says how to make them)"
shot --screenshot "$work/fp8_none.png" --panel fp8 --run "$work/runs/demo_fp32" --size ${W}x${H} \
     --layout-json "$work/fp8_none.json"
grep -q '"plots": \[\]' "$work/fp8_none.json" || { echo "FAIL: plots drawn for a run without fp8_scale events"; exit 1; }
"$check" differ "$work/fp8_none.png" "$work/fp8.png"
echo "== a one-step spike of the loss is drawn down to its tip"
mkdir -p "$work/spike/a_flat" "$work/spike/b_spike"
for s in $(seq 0 99); do
  v=1.0; [ "$s" -eq 50 ] && v=0.01
  echo "{\"type\":\"scalar\",\"step\":$s,\"name\":\"train/loss\",\"value\":2.0}" >>"$work/spike/a_flat/events.jsonl"
  echo "{\"type\":\"scalar\",\"step\":$s,\"name\":\"train/loss\",\"value\":$v}" >>"$work/spike/b_spike/events.jsonl"
done
shot --screenshot "$work/spike.png" --panel scale "$work/spike" --size ${W}x${H}
"$check" spike "$work/spike.png"
echo "== the runs panel"
shot --screenshot "$work/runs.png" --panel runs "$work/runs" --size ${W}x${H}
"$check" notblank "$work/runs.png"
"$check" differ "$work/runs.png" "$work/scale.png"
echo "== the gradients panel: the true-gradient heat map and the per-layer series are other pictures"
shot --screenshot "$work/gradients_heat_true.png" --panel gradients --run "$work/runs/demo_dynamic_scale" \
     --heat-true --size ${W}x${H}
"$check" notblank "$work/gradients_heat_true.png"
"$check" differ "$work/gradients.png" "$work/gradients_heat_true.png"
shot --screenshot "$work/gradients_subnormal.png" --panel gradients --run "$work/runs/demo_dynamic_scale" \
     --per-layer subnormal --size ${W}x${H}
"$check" differ "$work/gradients.png" "$work/gradients_subnormal.png"
set +e; "$viewer" --per-layer nope >/dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 2 ] || { echo "FAIL: --per-layer nope exited $rc, expected 2"; exit 1; }

echo "== a screenshot that cannot be written completely (a full disk) keeps the previous PNG"
# ulimit -f makes every write beyond 8 KB fail, as a full disk does (with SIGXFSZ ignored,
# write() returns an error instead of the signal killing the process).
cp "$work/runs.png" "$work/keep.png"
set +e
msg=$(xvfb-run -a -s '-screen 0 1280x800x24' bash -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' full "$viewer" \
        --screenshot "$work/keep.png" --panel runs "$work/runs" --size ${W}x${H} 2>&1); rc=$?
set -e
echo "$msg (exit $rc)"
[ "$rc" -ne 0 ] || { echo "FAIL: exit 0 although the PNG could not be written"; exit 1; }
[[ "$msg" == *"cannot write $work/keep.png"* ]] || { echo "FAIL: the message does not say which file"; exit 1; }
[[ "$msg" != *"wrote "* ]] || { echo "FAIL: it claims to have written the PNG"; exit 1; }
cmp "$work/runs.png" "$work/keep.png" || { echo "FAIL: the previous PNG was changed"; exit 1; }
! ls "$work"/keep.png.tmp* 2>/dev/null || { echo "FAIL: a temporary file was left behind"; exit 1; }
echo "PASS"
