#!/bin/sh
# lesson_12.sh LESSON_12 CASE — chapter 12's program on a tiny GPT and a tiny text (seconds):
#   resume     a run stopped after 4 of 8 steps and resumed ends in the same checkpoint, byte
#              for byte, as the run that never stopped (amp_f16: the GradScaler's state too;
#              2 micro-batches per step)
#   accum      --grad-accum 2 trains to the same losses as --grad-accum 1, within the
#              reordering of the sums (tests/unit/test_lm_step.cpp has the bounds)
#   diverged   a learning rate of 1e30 makes the loss NaN: one line, exit code 3
#   learns     the validation loss ends below the unigram baseline, and the sample is printed
#   memory     the accountant's table at the end and one "memory" event per step in the run
#              log, its five categories adding up to its peak; parameters = 4 bytes each (FP32)
#   plan       --plan reproduces ZeRO's figure 1 row (Ψ = 7.5B, N = 64: 120 / 31.4 / 16.6 /
#              1.9 GB), trains nothing; a --plan flag without --plan, or a bad size (0, past
#              int64, or bytes past a double's range), exits 2
#   recompute  --recompute-table at depths 2 and 6: the same gradient bits with and
#              without recomputed blocks, fewer activation bytes with (under a third at
#              depth 6), no run folder; --recompute trains (its memory table's
#              activations below the plain run's); a table flag alone exits 2
#   files      no file is lost or mixed: --checkpoint over the training text, over another
#              run's log or into another run's folder, and --resume with --overwrite, are
#              each refused (exit 2, one line) and leave every file as it was
#   live       a run folder a live run writes is not taken over by --overwrite (exit 2, naming
#              the folder and the process); once that run is gone (killed), it is
#   data       --resume after the --text file changed (same characters, other text) is
#              refused, naming the file; with the text it was trained on it resumes
#   prompt     --prompt '' is refused before any training (exit 2, no run folder)
#   oversized  a GPT too large for memory (under ulimit -v): exit 1, one line saying how
#              many bytes its parameters and training need, not "std::bad_alloc"
#   untied     N of "6N" is the same tied or untied: an LM head of its own adds V·C
#              parameters to the products and takes wte's V·C out of them (only looked up)
#   big_resume --resume of a 1 GiB file that is not a checkpoint (sparse) under a 1 GB
#              address-space limit: refused from its first bytes, not read whole first
set -e
L="$1"
CASE="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
i=0
while [ $i -lt 30 ]; do
  printf 'the cat sat on the mat. the dog sat on the log. a bird sang in the tree.\n' >>tiny.txt
  i=$((i + 1))
done
T="--text tiny.txt --n-layer 1 --n-head 2 --n-embd 16 --block-size 8 --batch-size 4 --warmup 1
   --eval-batches 2 --sample-chars 20 --threads 1 --peak-gflops 1"

case "$CASE" in
untied)
  # "P parameters, N in matmuls": untied has V·C more parameters and the same N.
  "$L" $T --steps 2 --eval-every 2 --run-name tied >tied.txt
  "$L" $T --steps 2 --eval-every 2 --run-name untied --untied >untied.txt
  line() { sed -n 's/^ *\([0-9]*\) parameters, \([0-9]*\) in matmuls.*/\1 \2/p' "$1"; }
  set -- $(line tied.txt) $(line untied.txt)
  [ $# -eq 4 ] || { cat tied.txt untied.txt; echo "no parameter line"; exit 1; }
  echo "tied: $1 parameters, N = $2; untied: $3 parameters, N = $4"
  [ "$3" -gt "$1" ] && [ "$2" -eq "$4" ] || { echo "N must not change with an untied head"; exit 1; } ;;
resume)
  A="$T --steps 8 --eval-every 4 --precision amp_f16 --grad-accum 2"
  "$L" $A --checkpoint straight.ckpt --run-name straight >straight.txt
  "$L" $A --stop-after 4 --checkpoint part.ckpt --run-name part >half.txt
  grep -q "stopped after step 4 of 8" half.txt || { cat half.txt; echo "no stop line"; exit 1; }
  "$L" $A --resume part.ckpt --checkpoint part.ckpt --run-name part >resumed.txt
  grep -q "resumed from part.ckpt at step 4" resumed.txt || { cat resumed.txt; echo "no resume line"; exit 1; }
  cmp straight.ckpt part.ckpt || { echo "the resumed run departs from the uninterrupted one"; exit 1; }
  # a checkpoint that is done has nothing to train
  "$L" $A --resume straight.ckpt --run-name straight | grep -q "all 8 steps of this run are done"
  # a flag the checkpoint decides, given with another value, is refused
  out=$("$L" $A --lr 0.5 --resume part.ckpt --run-name part 2>&1) && exit 1
  echo "$out" | grep -q "trained with --lr" || { echo "$out"; exit 1; }
  grep RESULT straight.txt resumed.txt ;;
accum)
  A="$T --steps 6 --eval-every 6"
  "$L" $A --run-name one >one.txt
  "$L" $A --grad-accum 4 --run-name four >four.txt
  a=$(sed -n 's/.*val_loss=\([0-9.]*\).*/\1/p' one.txt)
  b=$(sed -n 's/.*val_loss=\([0-9.]*\).*/\1/p' four.txt)
  echo "val loss: grad-accum 1 $a, grad-accum 4 $b"
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d < 1e-3) }' ;;
diverged)
  out=$("$L" $T --steps 6 --lr 1e30 --grad-clip 0 2>&1 >/dev/null) && exit 1
  rc=$?
  echo "$out"
  [ "$rc" -eq 3 ] || { echo "expected exit code 3, got $rc"; exit 1; }
  echo "$out" | grep -q "diverged at step" ;;
learns)
  "$L" $T --steps 60 --eval-every 60 --lr 0.01 >out.txt
  cat out.txt
  grep -q "^sample (temperature 0.8, seed 0):" out.txt
  # the compute: N and the FLOPs per token from the configuration's formulas (L = 1, C = 16,
  # T = 8): parameters L(12C² + 13C) + VC + TC + 2C, N = all but the TC of wpe,
  # FLOPs/token = 6N + 12·L·C·T; and MFU = achieved / peak (--peak-gflops 1)
  V=$(sed -n 's/.*vocabulary \([0-9]*\).*/\1/p' out.txt)
  params=$(( 12 * 16 * 16 + 13 * 16 + V * 16 + 8 * 16 + 2 * 16 ))
  N=$(( params - 8 * 16 ))
  grep -q "^  $params parameters, $N in matmuls" out.txt || { echo "expected $params parameters, N = $N"; exit 1; }
  grep -q "FLOPs per token = 6N + 12·L·C·T = $(( 6 * N )) + $(( 12 * 16 * 8 )) = " out.txt \
    || { echo "expected 6N = $(( 6 * N )) and 12LCT = 1536"; exit 1; }
  # compute: S s/step, R tokens/s × F FLOPs/token = A GFLOP/s achieved, MFU M% of 1.0 GFLOP/s
  awk '/^compute:/ { r = $4; f = $7; a = $10; m = $14; sub("%", "", m); p = r * f / 1e9
                     d1 = a - p; d2 = m - 100 * p; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
                     ok = p > 0 && d1 <= 0.005 + 0.005 * p && d2 <= 0.05 + 0.5 * p }
       END { exit !ok }' out.txt || { echo "achieved is not tokens/s × FLOPs/token, or MFU not achieved / peak"; exit 1; }
  awk '/^RESULT/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
       END { exit !(v["val_loss"] + 0 < 0.8 * v["unigram"]) }' out.txt ;;
memory)
  "$L" $T --steps 3 --eval-every 3 --run-name mem >out.txt
  grep -q "^memory on cpu: peak " out.txt || { cat out.txt; echo "no memory table"; exit 1; }
  n=$(grep -c '"type":"memory"' runs/mem/events.jsonl)
  [ "$n" -eq 3 ] || { echo "expected 3 memory events, got $n"; exit 1; }
  params=$(sed -n 's/^  \([0-9]*\) parameters,.*/\1/p' out.txt)
  # every event: the five categories add up to the peak, and the parameters hold 4 bytes each
  grep '"type":"memory"' runs/mem/events.jsonl | awk -v p="$params" '
    { for (k = 0; k < 8; k++) v[k] = 0
      n = split($0, f, /[,{}]/)
      for (i = 1; i <= n; i++) { split(f[i], kv, ":"); gsub(/"/, "", kv[1]); val[kv[1]] = kv[2] }
      sum = val["parameters"] + val["gradients"] + val["optimizer_state"] + val["activations"] + val["temporaries"]
      if (sum != val["peak"] || val["parameters"] != 4 * p) bad = 1 }
    END { exit bad }' || { grep '"type":"memory"' runs/mem/events.jsonl; echo "a memory event does not add up (parameters = 4 x $params?)"; exit 1; } ;;
plan)
  out=$("$L" --plan --params 7.5e9 --ranks 64)
  echo "$out"
  for gb in "120.0 GB" "31.4 GB" "16.6 GB" "1.9 GB"; do
    echo "$out" | grep -q "$gb" || { echo "expected $gb"; exit 1; }
  done
  [ ! -d runs ] || { echo "--plan wrote a run folder"; exit 1; }
  out=$("$L" --params 7.5e9 2>&1) && exit 1
  [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "belongs to --plan" || { echo "$out"; exit 1; }
  "$L" --plan --params 7.5e9 --ranks 0 >/dev/null 2>&1 && exit 1
  [ $? -eq 2 ] || { echo "a bad --ranks must exit 2"; exit 1; }
  # a size past int64 is refused, not clamped; a Ψ whose bytes pass a double's range too
  for bad in "--ranks 9223372036854775808 --params 7.5e9" "--params 5e307 --ranks 64" \
             "--layers 9223372036854775808 --params 7.5e9 --ranks 64 --hidden 8 --heads 2 --seq 4 --batch 1"; do
    out=$("$L" --plan $bad 2>&1) && { echo "$out"; echo "$bad: accepted"; exit 1; }
    rc=$?
    flag=${bad%% *}
    [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q -- "$flag" \
      || { echo "$out"; echo "$bad: expected one line naming $flag and exit 2, got exit $rc"; exit 1; }
  done ;;
recompute)
  out=$("$L" $T --recompute-table --depths 2 6 --table-steps 1)
  echo "$out"
  [ "$(echo "$out" | grep -c 'the same bits$')" -eq 2 ] || { echo "expected the same gradient bits at both depths"; exit 1; }
  # columns: depth, plain activations (value unit), recomputed (value unit), ratio, ...
  echo "$out" | awk '$1 == 2 || $1 == 6 { r[$1] = $6 } END { exit !(r[2] < 1 && r[6] <= 0.34) }' \
    || { echo "expected fewer activation bytes recomputed, a third or less at depth 6"; exit 1; }
  [ ! -d runs ] || { echo "--recompute-table wrote a run folder"; exit 1; }
  act() { sed -n 's/^activations *\([0-9.]*\) \([KM]i*B\|B\).*/\1 \2/p' "$1"; }
  T4=$(echo $T | sed 's/--n-layer 1/--n-layer 4/')
  "$L" $T4 --steps 2 --eval-every 2 --run-name plain >plain.txt
  "$L" $T4 --steps 2 --eval-every 2 --run-name again --recompute >again.txt
  grep -q "recomputed blocks" again.txt || { cat again.txt; echo "the model line does not say recomputed blocks"; exit 1; }
  a=$(act plain.txt); b=$(act again.txt)
  echo "activations at the peak: $a plain, $b recomputed"
  to_b() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : 1; print v * m }'; }
  [ "$(awk -v x="$(to_b $b)" -v y="$(to_b $a)" 'BEGIN { print (x < y) }')" = 1 ] \
    || { echo "recomputed training held no fewer activation bytes"; exit 1; }
  out=$("$L" --depths 4 2>&1) && exit 1
  echo "$out" | grep -q "belongs to --recompute-table" || { echo "$out"; exit 1; } ;;
files)
  A="$T --steps 2 --eval-every 1"
  # refused: exit 2, exactly one line containing $1, no run folder $2 made
  refused() {
    [ "$rc" -eq 2 ] || { echo "$out"; echo "expected exit code 2, got $rc"; exit 1; }
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "$out"; echo "expected one line"; exit 1; }
    printf '%s\n' "$out" | grep -qF -- "$1" || { echo "$out"; echo "expected: $1"; exit 1; }
    [ ! -d "runs/$2" ] || { echo "a refused run made runs/$2"; exit 1; }
  }
  cp tiny.txt tiny.before
  rc=0; out=$("$L" $A --checkpoint tiny.txt --run-name f 2>&1) || rc=$?
  refused "tiny.txt exists and is not a halfgrad checkpoint" f
  cmp tiny.txt tiny.before || { echo "the training text was changed"; exit 1; }
  "$L" $A --run-name other >/dev/null
  cp runs/other/events.jsonl other.before
  rc=0; out=$("$L" $A --checkpoint runs/other/events.jsonl --run-name f 2>&1) || rc=$?
  refused "is a run log's name" f
  rc=0; out=$("$L" $A --checkpoint runs/other/c.ckpt --run-name f 2>&1) || rc=$?
  refused "inside runs/other, the folder of another run" f
  cmp runs/other/events.jsonl other.before || { echo "another run's log was changed"; exit 1; }
  [ ! -e runs/other/c.ckpt ] || { echo "a checkpoint was written into another run's folder"; exit 1; }
  "$L" $A --stop-after 1 --checkpoint c.ckpt --run-name r >/dev/null
  cp runs/r/events.jsonl r.before
  rc=0; out=$("$L" $A --resume c.ckpt --overwrite --run-name r 2>&1) || rc=$?
  refused "--overwrite and --resume" none
  cmp runs/r/events.jsonl r.before || { echo "--resume --overwrite changed the run log"; exit 1; }
  echo "ok: every refusal left the files as they were" ;;
live)
  "$L" $T --steps 10000000 --eval-every 10000000 --run-name race >live.txt 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || :; rm -rf "$dir"' EXIT
  i=0
  while ! grep -q '"type":"scalar"' runs/race/events.jsonl 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || { cat live.txt; echo "the first run never started"; exit 1; }
    sleep 0.1
  done
  rc=0; out=$("$L" $T --steps 2 --eval-every 2 --seed 2 --run-name race --overwrite 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] || { echo "expected exit code 2, got $rc"; exit 1; }
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "expected one line"; exit 1; }
  printf '%s\n' "$out" | grep -qF "runs/race" || { echo "the line does not name the folder"; exit 1; }
  printf '%s\n' "$out" | grep -qF "process $pid" || { echo "the line does not name process $pid"; exit 1; }
  grep -q '"seed": 0' runs/race/run.json || { cat runs/race/run.json; echo "run.json is not the live run's"; exit 1; }
  kill $pid
  wait $pid || true
  # the lock went with the process: --overwrite now replaces the folder
  "$L" $T --steps 2 --eval-every 2 --seed 2 --run-name race --overwrite >second.txt
  grep -q '"seed": 2' runs/race/run.json || { cat runs/race/run.json; echo "run.json is not the second run's"; exit 1; }
  grep -q '"status": "finished"' runs/race/run.json || { echo "the second run did not finish"; exit 1; } ;;
data)
  A="$T --steps 4 --eval-every 2"
  "$L" $A --stop-after 2 --checkpoint c.ckpt --run-name d >/dev/null
  cp tiny.txt tiny.trained
  tr 'ct' 'tc' <tiny.trained >tiny.txt  # the same characters, another text
  rc=0; out=$("$L" $A --resume c.ckpt --run-name d 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] || { echo "expected exit code 2, got $rc"; exit 1; }
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "expected one line"; exit 1; }
  printf '%s\n' "$out" | grep -qF "tiny.txt" || { echo "the line does not name the text"; exit 1; }
  printf '%s\n' "$out" | grep -qF "another text" || { echo "the line does not say the text changed"; exit 1; }
  cp tiny.trained tiny.txt
  "$L" $A --resume c.ckpt --run-name d | grep -q "resumed from c.ckpt at step 2" ;;
prompt)
  rc=0; out=$("$L" $T --steps 2 --prompt '' --run-name p 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] || { echo "expected exit code 2, got $rc"; exit 1; }
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "expected one line, before any training"; exit 1; }
  printf '%s\n' "$out" | grep -qF -- "--prompt" || { echo "the line does not name --prompt"; exit 1; }
  [ ! -d runs/p ] || { echo "a run folder was made"; exit 1; } ;;
oversized)
  # 256 blocks of width 16384: 3.3e12 bytes of parameters. Under 2 GB of address space, so a
  # build that tried to allocate them fails at once instead of taking the machine's memory.
  big=$(echo $T | sed 's/--n-layer 1 --n-head 2 --n-embd 16/--n-layer 256 --n-head 256 --n-embd 16384/')
  rc=0; out=$(ulimit -v 2000000; "$L" $big --steps 2 --run-name o 2>&1 >/dev/null) || rc=$?
  echo "$out"
  [ "$rc" -eq 1 ] || { echo "expected exit code 1, got $rc"; exit 1; }
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "expected one line"; exit 1; }
  for say in "out of memory" " parameters" "16 bytes a parameter" "activations"; do
    printf '%s\n' "$out" | grep -qF -- "$say" || { echo "expected the line to say: $say"; exit 1; }
  done
  [ ! -d runs/o ] || { echo "a run folder was made"; exit 1; } ;;
big_resume)
  truncate -s 1G big.ckpt
  rc=0; out=$(ulimit -v 1000000; "$L" $T --resume big.ckpt --run-name b 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] || { echo "expected exit code 2, got $rc"; exit 1; }
  printf '%s\n' "$out" | grep -qF "big.ckpt: not a valid checkpoint: bad magic" \
    || { echo "expected the file to be refused from its first bytes"; exit 1; } ;;
*)
  echo "unknown case $CASE"; exit 1 ;;
esac
