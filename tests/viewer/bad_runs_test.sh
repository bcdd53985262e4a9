#!/usr/bin/env bash
# Damaged run folders (make_bad_runs.sh: the values that once crashed or hung the viewer, bad
# fp8_scale fields, truncation, garbage, zero bytes, a byte-order mark, CRLF, repeated steps, a
# 100 MB line, run.json as an array, a number, a string, a pipe ...) rendered headless under a time limit
# (timeout) and a memory limit (ulimit -v): no crash, no hang, and each folder's corrupt lines
# reported on stderr, as many as make_bad_runs.sh says, with the words it names. Then the 100 MB
# line must cost no memory, and a missing folder on the command line must be an error.
# One viewer takes every run's picture in a panel (--screenshot 'DIR/{run}.png'): starting a
# viewer under Xvfb costs about a second, 31 of them would make this test slow.
# Usage: bad_runs_test.sh VIEWER PNG_CHECK WORKDIR
# Exits 77 (ctest: skipped, never passed) when xvfb-run or the viewer is missing.
set -euo pipefail
viewer="${1:-}"; check="$2"; work="$3"

if [ -z "$viewer" ] || [ ! -x "$viewer" ]; then
  echo "SKIP: halfgrad-viewer was not built (libimgui-dev, libglfw3-dev or OpenGL missing)"; exit 77
fi
if ! command -v xvfb-run >/dev/null; then
  echo "SKIP: xvfb-run is not installed (apt-get install xvfb xauth)"; exit 77
fi
if [ -z "${HG_BAD_RUNS_XVFB:-}" ]; then  # one X server for every picture below
  rm -rf "$work"; mkdir -p "$work"
  bash "$(dirname "$0")/make_bad_runs.sh" "$work/runs"
  HG_BAD_RUNS_XVFB=1 exec xvfb-run -a -s '-screen 0 1280x800x24' bash "$0" "$@"
fi

# A failure is reported and counted, and the next case still runs: one run shows every case
# that fails.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# Mesa's software renderer and glibc reserve memory per thread: fix their thread counts, so
# the memory a viewer takes is the same on a 2-core and a 64-core machine (about 0.5 GB of
# address space for a small run).
export LP_NUM_THREADS=2 MALLOC_ARENA_MAX=2
limit_kb=1500000  # address space per viewer
limit_s=120       # a viewer that takes all the pictures (a few seconds on an idle machine)

# view NAME PANEL [ARGS...]: the viewer in PANEL; its stdout and stderr in $work/NAME.PANEL.*.
# Returns 1 (after fail) on a hang, a crash or an error.
view() {
  local name=$1 panel=$2 rc; shift 2
  local out="$work/$name.$panel"
  set +e
  (ulimit -v $limit_kb; exec timeout $limit_s "$viewer" --panel "$panel" --size 640x480 "$@") \
    > "$out.out" 2> "$out.err"
  rc=$?
  set -e
  [ $rc -ne 124 ] || { fail "$name, $panel panel: still running after $limit_s s (a hang)"; return 1; }
  [ $rc -eq 0 ] || { fail "$name, $panel panel: exit $rc$([ $rc -gt 128 ] && echo " (signal $((rc - 128)))"): $(tail -c 300 "$out.err")"; return 1; }
}
# A whole PNG of the asked size. (Not "notblank": a panel with nothing to draw is nearly blank.)
picture() { "$check" size "$1" 640 480 > /dev/null; }

echo "== every damaged run folder in the Gradients, FP8 and Runs panels: one viewer, a picture per run"
# {run} in --screenshot: one picture per run, each run alone in the view. If the viewer stops
# (a crash, a hang), the first run without a picture is where.
for panel in gradients fp8 runs; do
  view all "$panel" --screenshot "$work/{run}.$panel.png" "$work/runs" || true
done
err="$work/all.gradients.err"
while read -r name corrupt phrase; do
  for panel in gradients fp8 runs; do
    picture "$work/$name.$panel.png" || { fail "$name: no picture in the $panel panel"; continue 2; }
  done
  report=$(grep -F "run $name ($work/runs/$name): " "$err" || true)
  if [ "$corrupt" -gt 0 ]; then
    [[ "$report" == *": $corrupt corrupt line"* ]] ||
      { fail "$name: expected \"$corrupt corrupt line(s)\" on stderr, got: ${report:-nothing}"; continue; }
  elif [[ "$report" == *"corrupt line"* ]]; then
    fail "$name: no corrupt line expected, got: $report"; continue
  fi
  if [ -n "$phrase" ] && [[ "$report" != *"$phrase"* ]]; then
    fail "$name: expected \"$phrase\" on stderr, got: ${report:-nothing}"; continue
  fi
  printf 'ok  %-20s %s\n' "$name" "$(printf '%s' "$report" | head -n 1 | cut -c 1-150)"
done < "$work/runs/expected"

echo "== every run overlaid in the Loss-scale panel"
if view all scale --screenshot "$work/all.scale.png" "$work/runs" && "$check" notblank "$work/all.scale.png"; then
  [ "$(grep -c "corrupt line" "$work/all.scale.err")" -eq "$(awk '$2 > 0' "$work/runs/expected" | wc -l)" ] ||
    fail "not every run with corrupt lines was reported: $(head -c 300 "$work/all.scale.err")"
fi

echo "== the 100 MB line costs no memory: peak memory next to a run of one step"
for name in one_point long_line; do view "$name" gradients --run "$work/runs/$name" --measure-frames 1 || true; done
peak() { sed -n 's/.*peak memory \([0-9]*\) MB.*/\1/p' "$work/$1.out" 2>/dev/null || true; }
small=$(peak one_point.gradients); long=$(peak long_line.gradients)
echo "one_point: $small MB, long_line: $long MB"
if [ -z "$small" ] || [ -z "$long" ]; then
  fail "no peak memory in the --measure-frames output"
elif [ "$long" -gt $((small + 32)) ]; then
  fail "long_line took $long MB, one_point $small MB: the long line was held"
fi

echo "== a folder on the command line that does not exist, or is a file: exit 2, naming it"
for bad in "$work/no_such_folder" "$work/runs/expected"; do
  set +e; msg=$("$viewer" --screenshot "$work/x.png" "$bad" 2>&1); rc=$?; set -e
  echo "$msg (exit $rc)"
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc, expected 2"
  [[ "$msg" == *"$bad"* ]] || fail "$bad: the message does not name the path"
  [ ! -e "$work/x.png" ] || fail "$bad: a picture was made"
done
if [ "$(id -u)" -ne 0 ]; then  # root reads any folder
  mkdir -p "$work/locked"; chmod 000 "$work/locked"
  set +e; msg=$("$viewer" --screenshot "$work/x.png" "$work/locked" 2>&1); rc=$?; set -e
  chmod 755 "$work/locked"
  echo "$msg (exit $rc)"
  [ "$rc" -eq 2 ] && [[ "$msg" == *"cannot read"* ]] || fail "an unreadable folder: exit $rc"
fi
rm -f "$work/runs/long_line/events.jsonl"  # 100 MB
[ "$failures" -eq 0 ] || { echo "$failures FAILED"; exit 1; }
echo "PASS"
