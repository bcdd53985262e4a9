#!/usr/bin/env bash
# The Lab panel under Xvfb: a live run started by the viewer with --script, its commands in the
# run log and a picture of it; the same script twice gives the same log in two new folders; a
# bad script refused before any run; a run that dies shown as such, never a hang; the viewer
# killed leaves the run's files whole and the run stopped.
# Usage: lab_test.sh VIEWER PNG_CHECK WORKDIR
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
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_WAIT_POLICY=PASSIVE
shot() { xvfb-run -a -s '-screen 0 1280x800x24' "$viewer" --lab-wait 120 "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
# Every command: each recipe it passes through (an FP8 one last), the loss scale, the growth
# interval, the learning rate, pause / step / resume, and a branch (a second run from step 10).
cat > every.txt <<'EOF'
at 0 set recipe dynamic_scale; at 0 set growth_interval 5
at 10 branch amp_bf16
at 12 set loss_scale 2^-20
at 16 pause; at 16 step 4; at 20 resume
at 24 set recipe amp_f16; at 26 set lr 0.01
at 30 set recipe fp16_naive
at 33 set recipe fp8_current
EOF

echo "== a live run from --script: its commands applied at their steps, a picture of it"
out=$(shot --script every.txt --lab-steps 36 --panel lab --screenshot lab1.png --size 1280x800)
echo "$out"
grep -q "lab: runs/lab_1: exit code 0 (finished)" <<<"$out" || fail "the run did not finish, or the viewer did not say so"
"$check" notblank lab1.png
n=$(grep -c '"type":"command".*"applied":true\|"applied":true.*"type":"command"' runs/lab_1/events.jsonl || true)
[ "$n" -eq 11 ] || fail "$n commands applied, expected 11"
grep -q '"tensor":"fc1.dy","type":"fp8_scale"\|"type":"fp8_scale".*"tensor":"fc1.dy"' runs/lab_1/events.jsonl ||
  fail "the FP8 recipe logged no fp8_scale event for the FP8 panel"
! grep -q '"applied":false' runs/lab_1/events.jsonl || fail "a command of the script was refused"
grep -q '"cmd":"branch".*"step":10' runs/lab_1/events.jsonl || fail "no branch at step 10"
grep -q '"cmd":"step","n":4},"source":"script","step":16' runs/lab_1/events.jsonl || fail "no step 4 at step 16"
[ -s runs/lab_1_b10/events.jsonl ] || fail "the branch's run folder runs/lab_1_b10 has no events"
grep -q '"status":"finished","step":35' runs/lab_1_b10/events.jsonl || fail "the branch did not run to step 36"

echo "== the same script again: a new folder, the same log (apart from the folder's own name)"
shot --script every.txt --lab-steps 36 --panel scale --presenter --screenshot lab2.png --size 1280x800 --ui-scale 1.5
[ -d runs/lab_2 ] || fail "the second run did not get a folder of its own"
cmp <(sed 's/lab_1/lab_N/g' runs/lab_1/events.jsonl) <(sed 's/lab_2/lab_N/g' runs/lab_2/events.jsonl) ||
  fail "the same script gave another log"
cmp <(sed 's/lab_1/lab_N/g' runs/lab_1_b10/events.jsonl) <(sed 's/lab_2/lab_N/g' runs/lab_2_b10/events.jsonl) ||
  fail "the branches' logs differ"
"$check" notblank lab2.png
"$check" differ lab1.png lab2.png

echo "== a bad script: one line, exit 2, no run"
printf 'at 5 set loss_scale 3\n' > bad.txt
set +e
err=$(env -u DISPLAY "$viewer" --script bad.txt --screenshot x.png 2>&1 >/dev/null); rc=$?
set -e
echo "$err (exit $rc)"
[ "$rc" -eq 2 ] && grep -q "bad.txt line 1" <<<"$err" && [ ! -e runs/lab_3 ] || fail "a bad script was not refused first"

echo "== a run that dies (a static scale of 2^30 overflows F16 into the weights): the viewer says so"
printf 'at 0 set recipe static_scale; at 0 set loss_scale 2^30\n' > dies.txt
out=$(shot --script dies.txt --panel lab --screenshot dies.png --size 1280x800)
echo "$out"
grep -q "lab: runs/lab_3: exit code 3 (the training diverged)" <<<"$out" || fail "the dead run was not reported"
grep -q '"status":"diverged"' runs/lab_3/events.jsonl || fail "the run log does not say diverged"

echo "== the viewer killed: the run stops, its files read whole"
xvfb-run -a -s '-screen 0 1280x800x24' sh -c 'echo $$ > viewer.pid; exec "$0" --lab --lab-recipe dynamic_scale' \
  "$viewer" >/dev/null 2>&1 &
xvfb=$!
for _ in $(seq 600); do  # until the run has logged 30 lines (at most 60 s)
  [ -f runs/lab_4/events.jsonl ] && [ "$(wc -l < runs/lab_4/events.jsonl)" -ge 30 ] && break
  sleep 0.1
done
[ "$(wc -l < runs/lab_4/events.jsonl)" -ge 30 ] || fail "the interactive viewer's run did not train"
kill -9 "$(cat viewer.pid)"
wait "$xvfb" || true
for _ in $(seq 100); do flock -n runs/lab_4/.lock true && break; sleep 0.1; done
flock -n runs/lab_4/.lock true || fail "the run still holds its folder 10 s after the viewer died"
lines=$(wc -l < runs/lab_4/events.jsonl)
sleep 0.5
[ "$(wc -l < runs/lab_4/events.jsonl)" -eq "$lines" ] || fail "the run still writes"
err=$(xvfb-run -a -s '-screen 0 1280x800x24' "$viewer" runs/lab_4 --panel gradients --screenshot killed.png 2>&1 >/dev/null)
[ -z "$err" ] || fail "the killed run's folder does not read whole: $err"
grep -q '"status": *"running"' runs/lab_4/run.json || fail "run.json is not the one written at the start"
echo "OK"
