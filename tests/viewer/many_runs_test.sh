#!/usr/bin/env bash
# Thousands of runs. Chapter 13 writes a folder per rank (runs/<job>/rank<k>); a viewer pointed
# at 4000 of them, 1 GB of events, once read them all for any picture and died of std::bad_alloc
# under a limit on its address space. Now the runs share one memory budget and a picture reads
# only the runs it shows (viewer/run_set.h): each panel, under an address-space limit (ulimit -v)
# and a time limit (timeout), must make its picture, say how many runs it found and read, and
# read no more than it shows. (The events file is one, hard-linked into every folder: no disk.)
# Then --screenshot 'DIR/{run}.png' gives each rank its own file (a/rank0 -> a_rank0.png), and two
# runs whose pictures would be one file are refused before anything is written.
# Usage: many_runs_test.sh VIEWER PNG_CHECK WORKDIR
# Exits 77 (ctest: skipped, never passed) when xvfb-run or the viewer is missing.
set -euo pipefail
viewer="${1:-}"; check="$2"; work="$3"

if [ -z "$viewer" ] || [ ! -x "$viewer" ]; then
  echo "SKIP: halfgrad-viewer was not built (libimgui-dev, libglfw3-dev or OpenGL missing)"; exit 77
fi
if ! command -v xvfb-run >/dev/null; then
  echo "SKIP: xvfb-run is not installed (apt-get install xvfb xauth)"; exit 77
fi
if [ -z "${HG_MANY_RUNS_XVFB:-}" ]; then  # one X server for every picture below
  trap 'rm -rf "$work"' EXIT
  rm -rf "$work"; mkdir -p "$work"
  set +e
  HG_MANY_RUNS_XVFB=1 xvfb-run -a -s '-screen 0 1280x800x24' bash "$0" "$@"
  exit $?
fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# As in bad_runs_test.sh: fixed thread counts, so the address space a viewer takes is the same
# on any machine (about 0.5 GB for a small run).
export LP_NUM_THREADS=2 MALLOC_ARENA_MAX=2
limit_kb=1200000  # address space per viewer: reading all 4000 runs needed more (std::bad_alloc)
limit_s=15        # per viewer; one that reads what it shows takes about a second

# One run of 1200 steps (loss, loss scale, gradient histograms, memory events: 269 kB), linked
# into runs/x/rank0 .. rank3999.
"$viewer" --make-demo-runs "$work/one" --demo-steps 1200 --demo-modes dynamic_scale > /dev/null
events="$work/one/demo_dynamic_scale/events.jsonl"
n=4000
perl -e 'my ($src, $dir, $n) = @ARGV; mkdir $dir; mkdir "$dir/x";
         for my $k (0 .. $n - 1) { mkdir "$dir/x/rank$k" or die "$dir/x/rank$k: $!";
                                    link($src, "$dir/x/rank$k/events.jsonl") or die "link: $!" }' \
     "$events" "$work/runs" "$n"
size=$(stat -c %s "$events")

echo "== $n runs of $size bytes of events each: every panel reads only what it shows"
for panel in runs scale fp8; do
  out="$work/$panel"
  set +e
  (ulimit -v $limit_kb; exec timeout $limit_s "$viewer" "$work/runs" --panel $panel --size 640x480 \
     --measure-frames 1 --screenshot "$out.png") > "$out.out" 2> "$out.err"
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    [ $rc -ne 124 ] || fail "$panel panel: still running after $limit_s s"
    fail "$panel panel: exit $rc: $(tail -c 300 "$out.err")"
    continue
  fi
  # "runs: 4000 found, 64 read, 17.2 MB, ..."
  line=$(grep '^runs: ' "$out.out" || true)
  echo "$panel: ${line%%; panel*}"
  found=$(sed -n 's/^runs: \([0-9]*\) found, .*/\1/p' <<<"$line")
  read_runs=$(sed -n 's/^runs: [0-9]* found, \([0-9]*\) read, .*/\1/p' <<<"$line")
  mb=$(sed -n 's/^runs: [0-9]* found, [0-9]* read, \([0-9.]*\) MB, .*/\1/p' <<<"$line")
  if [ -z "$found" ] || [ -z "$read_runs" ] || [ -z "$mb" ]; then
    fail "$panel panel: no 'runs: N found, M read, X MB' line: $(head -c 300 "$out.out")"; continue
  fi
  [ "$found" -eq "$n" ] || fail "$panel panel: found $found runs, expected $n"
  # The Scale panel overlays the first 64 runs found; the others show one run and list a
  # screenful of rows (the Runs panel), which are read to say how each run ended.
  [ "$read_runs" -ge 1 ] && [ "$read_runs" -le 64 ] || fail "$panel panel: read $read_runs runs, expected 1 .. 64"
  awk -v mb="$mb" -v k="$read_runs" -v s="$size" 'BEGIN { exit !(mb * 1e6 <= k * s + 1e5) }' ||
    fail "$panel panel: read $mb MB, more than its $read_runs runs hold"
  "$check" size "$out.png" 640 480 > /dev/null || fail "$panel panel: no picture"
done

echo "== --screenshot 'DIR/{run}.png': a file per rank, named after its job"
mkdir -p "$work/ranks/a/rank0" "$work/ranks/b/rank0" "$work/shots"
for s in $(seq 0 49); do  # a falls, b climbs: their pictures differ; only b logs memory
  echo "{\"type\":\"scalar\",\"step\":$s,\"name\":\"train/loss\",\"value\":$((100 - s))}" >>"$work/ranks/a/rank0/events.jsonl"
  echo "{\"type\":\"scalar\",\"step\":$s,\"name\":\"train/loss\",\"value\":$((1 + s))}" >>"$work/ranks/b/rank0/events.jsonl"
  echo "{\"type\":\"memory\",\"step\":$s,\"device\":\"cpu\",\"parameters\":400,\"gradients\":400,\"optimizer_state\":800,\"activations\":$((1000 + 10 * s)),\"temporaries\":100,\"peak\":$((2700 + 10 * s)),\"live\":1600}" >>"$work/ranks/b/rank0/events.jsonl"
done
shots() {  # shots NAME PANEL ARGS...: one viewer, its exit status in $rc and its stderr in $work/NAME.err
  local name=$1 panel=$2; shift 2
  set +e
  (ulimit -v $limit_kb; exec timeout $limit_s "$viewer" --panel "$panel" --size 640x480 "$@") \
    > "$work/$name.out" 2> "$work/$name.err"
  rc=$?
  set -e
}
shots folder scale --screenshot "$work/shots/{run}.png" "$work/ranks"
[ "$rc" -eq 0 ] || fail "a folder of two jobs: exit $rc: $(tail -c 300 "$work/folder.err")"
ls "$work/shots"
if [ -f "$work/shots/a_rank0.png" ] && [ -f "$work/shots/b_rank0.png" ]; then
  "$check" differ "$work/shots/a_rank0.png" "$work/shots/b_rank0.png" > /dev/null ||
    fail "a_rank0.png and b_rank0.png are the same picture"
else
  fail "expected a_rank0.png and b_rank0.png, got: $(ls "$work/shots" | tr '\n' ' ')"
fi
# Each picture shows its own run: a_rank0's Memory picture says a/rank0 logged no memory
# events, rather than showing b/rank0's (the only run that has them) under a_rank0's name.
rm -f "$work/shots"/*
shots memory memory --screenshot "$work/shots/{run}.png" "$work/ranks"
[ "$rc" -eq 0 ] && [ -f "$work/shots/a_rank0.png" ] && [ -f "$work/shots/b_rank0.png" ] &&
  "$check" differ "$work/shots/a_rank0.png" "$work/shots/b_rank0.png" > /dev/null ||
  fail "the Memory panel's a_rank0.png and b_rank0.png: exit $rc, the same picture or missing"
rm -f "$work/shots"/*
shots given scale --screenshot "$work/shots/{run}.png" --run "$work/ranks/a/rank0" --run "$work/ranks/b/rank0/"
[ "$rc" -eq 0 ] && [ -f "$work/shots/a_rank0.png" ] && [ -f "$work/shots/b_rank0.png" ] ||
  fail "two rank folders given with --run: exit $rc, files: $(ls "$work/shots" | tr '\n' ' ')"

echo "== two runs whose pictures would be one file: refused, nothing written"
rm -f "$work/shots"/*
mkdir -p "$work/ranks/a_rank0"
cp "$work/ranks/a/rank0/events.jsonl" "$work/ranks/a_rank0/"
shots clash scale --screenshot "$work/shots/{run}.png" "$work/ranks"
msg=$(cat "$work/clash.err")
echo "$msg (exit $rc)"
[ "$rc" -eq 2 ] || fail "runs a/rank0 and a_rank0 into one folder: exit $rc, expected 2"
[[ "$msg" == *"$work/ranks/a/rank0"* && "$msg" == *"$work/ranks/a_rank0"* ]] || fail "the message does not name both runs"
[ -z "$(ls "$work/shots")" ] || fail "pictures were written: $(ls "$work/shots" | tr '\n' ' ')"

[ "$failures" -eq 0 ] || { echo "$failures FAILED"; exit 1; }
echo "PASS"
