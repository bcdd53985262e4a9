#!/bin/sh
# bad_values.sh LESSONS_DIR NN — runs lesson_NN with every bad value of bad_values.txt that
# applies to chapter NN, and requires of each:
#   - exit code 2 (a command-line error), within 20 seconds
#   - exactly one line of output, "lesson_NN: ..." ("lesson 04: ..." for chapter 04), that
#     contains the row's text
#   - no work done: HG_DATA points nowhere, so a program that read data would fail with a
#     data error instead, and the folder it ran in holds the same files afterwards (no run
#     folder, no checkpoint).
dir=$(cd "$1" && pwd); nn="$2"
prog="$dir/lesson_$nn"
table="$(cd "$(dirname "$0")" && pwd)/bad_values.txt"
[ -x "$prog" ] || { echo "no $prog"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# What some rows need: run folders that exist, a folder, a file that is not a checkpoint.
for r in taken taken_fp32 taken_fp16_naive taken_master_weights taken_static_scale \
         taken_dynamic_scale taken_amp_f16 taken_amp_bf16 half_amp_f16; do
  mkdir -p "runs/$r"
done
mkdir afolder
echo "not a checkpoint" >garbage.ckpt
before=$(ls -RA)

prefix="lesson_$nn:"
[ "$nn" = 04 ] && prefix="lesson 04:"
nl='
'
checked=0; failed=0
while IFS='|' read -r chapters pattern args; do
  case "$chapters" in '#'*|'') continue ;; esac
  chapters=" $chapters "
  case "$chapters" in *" all "*) chapters="$chapters 01 02 03 04 05 06 07 08 09 10 11 13 " ;; esac
  case "$chapters" in *" train "*) chapters="$chapters 02 06 07 08 09 10 11 13 " ;; esac
  case "$chapters" in *" $nn "*) ;; *) continue ;; esac
  pattern=${pattern# }; pattern=${pattern% }
  eval "set -- $args"
  out=$(HG_DATA=/nonexistent timeout 20 "$prog" "$@" 2>&1); rc=$?
  checked=$((checked + 1))
  why=""
  if [ "$rc" -ne 2 ]; then why="exit code $rc, expected 2"
  else
    case "$out" in
      *"$nl"*|'') why="expected one line of output" ;;
      "$prefix "*"$pattern"*) ;;
      "$prefix "*) why="expected the line to contain: $pattern" ;;
      *) why="expected the line to start with '$prefix'" ;;
    esac
  fi
  [ -z "$why" ] && [ "$(ls -RA)" != "$before" ] && why="it left files behind: $(ls -RA | tr '\n' ' ')"
  if [ -n "$why" ]; then
    failed=$((failed + 1))
    echo "FAIL lesson_$nn$args: $why"
    printf '%s\n' "$out" | head -5 | sed 's/^/    /'
  else
    echo "ok   lesson_$nn$args -> $out"
  fi
done <"$table"
echo "lesson_$nn: $checked bad values, $failed not refused as they should be"
[ "$checked" -gt 0 ] && [ "$failed" -eq 0 ]
