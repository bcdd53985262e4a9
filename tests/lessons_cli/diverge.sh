#!/bin/sh
# diverge.sh LESSON N_DIVERGED N_RESULT [ARGS...] — runs LESSON on a slice of FashionMNIST in an
# empty folder and requires:
#   N_DIVERGED > 0: exit code 3; exactly N_DIVERGED lines on stderr, each "<who> diverged at
#                   step S: <cause>; run stopped (runs/X: status diverged)"; runs/X/run.json
#                   says "status": "diverged"; no checkpoint file was written
#   N_DIVERGED = 0: exit code 0 and nothing on stderr (a run that must NOT count as diverged)
#   N_RESULT:       that many RESULT lines (only runs that did not diverge report a result)
# $EXPECT, when set, is a fixed text stdout must contain; $LIMIT_TRAIN (256) the images trained on.
L="$1"; n_div="$2"; n_result="$3"; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
"$L" --limit-train "${LIMIT_TRAIN:-256}" --limit-test 100 --epochs 1 --threads 1 "$@" >out.txt 2>err.txt; rc=$?
cat out.txt err.txt
fail() { echo "FAIL: $*"; exit 1; }
if [ "$n_div" -gt 0 ]; then
  [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3 (diverged)"
else
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
fi
[ "$(wc -l <err.txt)" -eq "$n_div" ] || fail "expected $n_div line(s) on stderr"
while read -r line; do
  case "$line" in *" diverged at step "*"; run stopped (runs/"*": status diverged)") ;;
    *) fail "not a divergence line: $line" ;; esac
  dir=$(echo "$line" | sed 's/.*; run stopped (\(runs\/[^:]*\): status diverged)$/\1/')
  grep -q '"status": "diverged"' "$dir/run.json" || fail "$dir/run.json does not say diverged"
done <err.txt
[ "$(grep -c '^RESULT' out.txt)" -eq "$n_result" ] || fail "expected $n_result RESULT line(s)"
ls ./*.ckpt >/dev/null 2>&1 && fail "a checkpoint was written: $(ls ./*.ckpt)"
if [ -n "$EXPECT" ]; then grep -qF -- "$EXPECT" out.txt || fail "stdout lacks: $EXPECT"; fi
echo "ok"
