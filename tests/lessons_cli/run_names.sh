#!/bin/sh
# run_names.sh LESSON_06 — a run folder is never shared: the second run with the same
# --run-name is refused (exit 2, naming --overwrite) and leaves the first run's log as it
# was; --overwrite replaces the folder. (Chapter 06, one short FP32 run.)
L="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
A="--only fp32 --limit-train 256 --limit-test 100 --epochs 1 --threads 1 --stats-every 0 --run-name r"

"$L" $A >first.txt 2>&1 || { cat first.txt; fail "the first run failed"; }
[ -f runs/r_fp32/run.json ] || fail "no runs/r_fp32/run.json"
echo "the first run's" >runs/r_fp32/marker
cp runs/r_fp32/events.jsonl events.before

out=$("$L" $A 2>&1); rc=$?
echo "second run: $out"
[ "$rc" -eq 2 ] || fail "the second run with the same name: exit code $rc, expected 2"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "expected one line"
printf '%s\n' "$out" | grep -qF "runs/r_fp32 already exists" || fail "the line does not name the folder"
printf '%s\n' "$out" | grep -qF -- "--overwrite" || fail "the line does not name --overwrite"
[ -f runs/r_fp32/marker ] || fail "the refused run touched the first run's folder"
cmp -s events.before runs/r_fp32/events.jsonl || fail "the refused run changed the first run's events"

"$L" $A --overwrite >third.txt 2>&1 || { cat third.txt; fail "--overwrite: the run failed"; }
[ ! -f runs/r_fp32/marker ] || fail "--overwrite kept the old folder's files"
grep -q '"status": "finished"' runs/r_fp32/run.json || fail "--overwrite: the new run.json is not finished"
echo "ok"
