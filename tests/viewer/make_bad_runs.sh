#!/usr/bin/env bash
# Writes a corpus of damaged run folders into DIR, one folder per way a run log goes bad: the
# values that once crashed or hung the viewer, and what a crash, a full disk or an editor leave
# behind. Nothing here is committed as data: every file is made by this script at test time.
# Usage: make_bad_runs.sh DIR [BIG_LINE_BYTES]
#
# DIR/expected has one line per folder: "NAME CORRUPT_LINES [PHRASE]", the number of lines the
# viewer must report as corrupt, and words its report must contain (bad_runs_test.sh checks
# them). Each folder also holds good lines, so a reader that gave up on the whole file would
# show nothing.
set -euo pipefail
dir="$1"
big="${2:-100000000}"  # the long line: 100 MB by default
rm -rf "$dir"; mkdir -p "$dir"
export LC_ALL=C        # bytes are bytes (awk, tr)

# ---- helpers ------------------------------------------------------------------------------
# case_ NAME CORRUPT [PHRASE]: a new run folder with a good run.json; later writes go to $ev.
case_() {
  run="$dir/$1"; ev="$run/events.jsonl"
  mkdir -p "$run"
  printf '{"format":"halfgrad-run","version":1,"name":"%s","precision":"dynamic_scale","status":"finished"}\n' \
    "$1" > "$run/run.json"
  : > "$ev"
  echo "$1 $2 ${3:-}" >> "$dir/expected"
}
# Comma-separated zeros, made once (each $(...) forks a shell): $Z30 is 30 of them.
zeros() { local s="0"; for ((i = 1; i < $1; ++i)); do s+=",0"; done; printf '%s' "$s"; }
Z5=$(zeros 5) Z26=$(zeros 26) Z30=$(zeros 30) Z57=$(zeros 57) Z275=$(zeros 275) Z276=$(zeros 276)
# hist STEP EXP_MIN EXP_MAX COUNTS TOTAL [EXTRA]: a grad_hist line of parameter $param
# (fc1.weight unless set), scale 1024.
hist() {
  printf '{"type":"grad_hist","step":%s,"param":"%s","scale":1024,"exp_min":%s,"exp_max":%s,"counts":[%s],"below":0,"above":0,"zeros":1,"fp16_underflow":0,"fp16_subnormal":0,"fp16_overflow":0,"inf":0,"nan":0,"total":%s%s}\n' \
    "$1" "${param:-fc1.weight}" "$2" "$3" "$4" "$5" "${6:-}"
}
# good STEP: a good grad_hist (57 bins, 5 values at 2^-10, 1 zero) and a loss and a loss scale
good() {
  hist "$1" -40 16 "$Z30,5,$Z26" 6
  printf '{"type":"scalar","step":%s,"name":"train/loss","value":%s}\n' "$1" "0.$((9 - $1 % 9))"
  printf '{"type":"loss_scale","step":%s,"scale":1024,"found_inf":false,"skipped":false}\n' "$1"
}
goods() { for s in "$@"; do good "$s"; done; }

# ---- the values that crashed or hung the viewer -------------------------------------------
# bad CALL...: the bad line comes first, for its own parameter bad.weight, so a viewer that
# took it would show it (the Gradients panel picks the first parameter), then good steps.
bad() { param=bad.weight "$@"; goods 0 10; }
# the tick loop never advanced past 1e17 (step + 1 == step)
case_ step_1e17 1 "step: 1e+17 is outside 0 .. 2^40"
bad hist 1e17 -40 16 "$Z30,5,$Z26" 6 >> "$ev"
case_ step_2pow53 1 "step: 9007199254740993 is outside 0 .. 2^40"
bad hist 9007199254740993 -40 16 "$Z30,5,$Z26" 6 >> "$ev"
# reached heat_color as NaN
case_ counts_negative 1 "grad_hist counts[30]: -5 is negative"
bad hist 20 -40 16 "$Z30,-5,$Z26" 6 >> "$ev"
# 1e30 as an int64
case_ counts_absurd 1 "counts[30]: 1e+30 is outside 0 .. 2^48"
bad hist 20 -40 16 "$Z30,1e30,$Z26" 6 >> "$ev"
# exp_min + i overflowed an int: wrote outside the heat map
case_ exp_min_int_max 1 "exp_min: 2147483600 is outside -149 .. 127"
bad hist 20 2147483600 2147483610 "$Z5,5,$Z5" 6 >> "$ev"
# rows x columns: bad_alloc
case_ exp_min_minus_3e8 1 "exp_min: -300000000 is outside -149 .. 127"
bad hist 20 -300000000 -299999990 "$Z5,5,$Z5" 6 >> "$ev"
# "nan" where a whole number or a scale belongs
case_ nan_fields 4 "step: \"nan\" is not a whole number"
{ goods 0 10
  hist '"nan"' -40 16 "$Z57" 1
  hist 20 -40 16 "$Z30,\"nan\",$Z26" 6
  printf '{"type":"grad_hist","step":21,"param":"p","scale":"nan","exp_min":-40,"exp_max":16,"counts":[%s],"below":0,"above":0,"zeros":1,"fp16_underflow":0,"fp16_subnormal":0,"fp16_overflow":0,"inf":0,"nan":0,"total":1}\n' "$Z57"
  printf '{"type":"loss_scale","step":22,"scale":-1,"found_inf":false,"skipped":false}\n'
} >> "$ev"
case_ wrong_types 5 "step: \"5\" is not a whole number"
{ goods 0 10
  printf '{"type":"scalar","step":"5","name":"train/loss","value":1}\n'
  printf '{"type":"scalar","step":5,"name":7,"value":1}\n'
  printf '{"type":"loss_scale","step":5,"scale":1024,"found_inf":"yes","skipped":false}\n'
  printf '{"type":"note","step":5,"text":["a","b"]}\n'
  hist 20 -40 16 "$Z30,[5],$Z26" 6
} >> "$ev"
# the counts do not add up to total; a share above 100%
case_ sums_disagree 2 "total: 1000, but the bins"
{ goods 0 10
  hist 20 -40 16 "$Z30,5,$Z26" 1000
  hist 30 -40 16 "$Z30,5,$Z26" 6 ',"lost_update_fraction":7'
} >> "$ev"
# 4100 distinct parameters: the last 4 are not kept
case_ too_many_params 4 "a run may have 4096 parameters"
for ((i = 0; i < 4100; ++i)); do
  printf '{"type":"grad_hist","step":0,"param":"p%d","scale":1,"exp_min":0,"exp_max":0,"counts":[1],"below":0,"above":0,"zeros":0,"fp16_underflow":0,"fp16_subnormal":0,"fp16_overflow":0,"inf":0,"nan":0,"total":1}\n' "$i"
done >> "$ev"

# ---- chapter 14's fp8_scale events -------------------------------------------------------
# fp8 STEP TENSOR FORMAT AMAX SCALE [SCALE_MAX [HISTORY [UNDERFLOW [SATURATED]]]]: one cast.
fp8() {
  printf '{"type":"fp8_scale","step":%s,"tensor":"%s","format":"%s","amax":%s,"scale":%s,"scale_max":%s,"history_amax":%s,"underflow":%s,"saturated":%s}\n' \
    "$1" "$2" "$3" "$4" "$5" "${6:-$5}" "${7:-$4}" "${8:-0.001}" "${9:-0}"
}
# good casts of fc1's three tensors at steps 0..9 (delayed scaling's first step casts with 1)
fp8_goods() {
  for ((s = 0; s < 10; ++s)); do
    fp8 $s fc1.x E4M3 2.0 "$([ $s -eq 0 ] && echo 1 || echo 224)"
    fp8 $s fc1.w E4M3 0.0502 "$([ $s -eq 0 ] && echo 1 || echo 8960)" "" "" 0.01 "$([ $s -eq 0 ] && echo 0 || echo 2)"
    fp8 $s fc1.dy E5M2 0.001 "$([ $s -eq 0 ] && echo 1 || echo 57344000)"
  done
}
# each field broken once, for a tensor bad.dy of its own (the first line), then good casts
case_ fp8_bad_values 11 'line 1: fp8_scale format: "E3M4" is not E4M3 or E5M2'
{ fp8 20 bad.dy E3M4 0.001 1
  fp8 20 bad.dy e5m2 0.001 1
  fp8 21 bad.dy E5M2 0.001 -1
  fp8 22 bad.dy E5M2 '"-inf"' 1
  fp8 23 bad.dy E5M2 '"lots"' 1
  fp8 24 bad.dy E5M2 0.001 4 2
  fp8 25 bad.dy E5M2 0.001 1 1 0.001 1.5
  fp8 26 bad.dy E5M2 0.001 1 1 0.001 0.1 -3
  fp8 27 'bad\u0001dy' E5M2 0.001 1
  printf '{"type":"fp8_scale","step":28,"tensor":"bad.dy","format":"E5M2","amax":0.001,"scale":1,"scale_max":1,"underflow":0,"saturated":0}\n'
  fp8_goods
  fp8 10 fc1.x E5M2 2.0 224  # fc1.x was E4M3 before step 10
  goods 0 10
} >> "$ev"
# what the writer logs for a tensor that overflowed ("nan", "inf"), an all-zero one, an inf
# scale (448 / a subnormal amax in F32), a product that overflows doubles: kept, none drawn
case_ fp8_extremes 0
{ fp8_goods
  fp8 10 fc1.x E4M3 '"nan"' 224 224 '"nan"'
  fp8 11 fc1.x E4M3 '"inf"' 224 224 '"inf"' 0 281474976710656
  fp8 12 fc1.x E4M3 null 224 224 null 1
  fp8 13 fc1.x E4M3 0 224 224 0 0
  fp8 14 fc1.x E4M3 1e-45 '"inf"' '"inf"' 1e-45
  fp8 15 fc1.x E4M3 1e300 1e300 1e300 1e300
  fp8 16 fc1.x E4M3 2.0 0 0 2.0
  fp8 1099511627776 fc1.dy E5M2 5e-324 1.7976931348623157e308
} >> "$ev"
# 4100 distinct FP8 tensors: the last 4 are not kept
case_ too_many_fp8_tensors 4 "a run may have 4096 FP8 tensors"
for ((i = 0; i < 4100; ++i)); do fp8 0 "l$i.x" E4M3 1 448; done >> "$ev"

# ---- valid extremes: every limit at its edge, nothing corrupt, everything drawn ------------
case_ valid_extremes 0
{ hist 0 -149 127 "1,$Z275,281474976710654" 281474976710656
  printf '{"type":"grad_hist","step":1099511627776,"param":"fc1.weight","scale":1.401298464324817e-45,"exp_min":-149,"exp_max":127,"counts":[%s],"below":0,"above":0,"zeros":0,"fp16_underflow":0,"fp16_subnormal":0,"fp16_overflow":0,"inf":0,"nan":0,"total":1}\n' "1,$Z276"
  printf '{"type":"grad_hist","step":1099511627775,"param":"fc2.weight","scale":3.4e38,"exp_min":-149,"exp_max":127,"counts":[%s],"below":0,"above":0,"zeros":0,"fp16_underflow":0,"fp16_subnormal":0,"fp16_overflow":0,"inf":0,"nan":0,"total":1}\n' "$Z276,1"
  printf '{"type":"scalar","step":0,"name":"train/loss","value":1e308}\n'
  printf '{"type":"scalar","step":1,"name":"train/loss","value":-1e308}\n'
  printf '{"type":"scalar","step":1099511627776,"name":"train/loss","value":5e-324}\n'
  printf '{"type":"scalar","step":2,"name":"test/accuracy","value":"nan"}\n'
  printf '{"type":"loss_scale","step":0,"scale":1.401298464324817e-45,"found_inf":false,"skipped":false}\n'
  printf '{"type":"loss_scale","step":1099511627776,"scale":3.4e38,"found_inf":true,"skipped":true}\n'
} >> "$ev"
# a single step everywhere: zero-width ranges
case_ one_point 0
good 7 >> "$ev"

# ---- what crashes, full disks and editors leave -------------------------------------------
half="$(good 20)"; half="${half:0:100}"  # the first 100 bytes of a line
# the writer died mid-line: an incomplete last line, waited for
case_ truncated_end 0 "an incomplete last line (100 bytes) was not read"
{ goods 0 10; printf '%s' "$half"; } >> "$ev"
# a half line, then a new line after it (a resumed run)
case_ truncated_middle 1 "line 7: not valid JSON"
{ goods 0 10; printf '%s\n' "$half"; goods 30; } >> "$ev"
# three lines of random bytes between good lines
case_ garbage 3 "not valid JSON"
{ goods 0
  for seed in 1 2 3; do
    awk -v s="$seed" 'BEGIN { srand(s); for (i = 0; i < 3000; ++i) { c = int(rand() * 256); if (c != 10) printf "%c", c } printf "\n" }'
  done
  goods 10
} >> "$ev"
# 2 MB of zero bytes, no newline: what a crash after a full disk leaves
case_ nul_bytes 1 "longer than 1048576 bytes, skipped unread"
{ goods 0 10; head -c 2000000 /dev/zero; } >> "$ev"
# a UTF-8 byte-order mark before the first line (some editors)
case_ bom 0
{ printf '\xef\xbb\xbf'; goods 0 10; } >> "$ev"
# Windows line ends
case_ crlf 0
goods 0 10 | sed 's/$/\r/' >> "$ev"
# the same steps logged twice, and steps that go back (a resume)
case_ duplicate_steps 0
{ goods 0 10 20 30; goods 10 20; goods 20 40; } >> "$ev"
# 100,000 nested arrays: no recursion may follow them
case_ deep_nesting 1 "not a JSON object"
{ goods 0 10; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; printf '\n'; } >> "$ev"
# one line of $big bytes: skipped without being held in memory
case_ long_line 1 "line 7: longer than 1048576 bytes, skipped unread"
{ goods 0 10
  printf '{"type":"note","step":3,"text":"'; head -c "$big" /dev/zero | tr '\0' 'x'; printf '"}\n'
  goods 20
} >> "$ev"
case_ empty_files 0 "run.json: [json.exception.parse_error.101]"
: > "$run/run.json"

# ---- run.json that is not an object, or not a file ----------------------------------------
for kind in array number string; do
  case_ "run_json_$kind" 0 "run.json is a$([ $kind = array ] && echo n) $kind, not a JSON object"
  goods 0 10 >> "$ev"
done
case_ run_json_deep 0 "run.json nests deeper than 32 levels"
goods 0 10 >> "$ev"
printf '[1,2,3]\n' > "$dir/run_json_array/run.json"
printf '42\n' > "$dir/run_json_number/run.json"
printf '"a run"\n' > "$dir/run_json_string/run.json"
{ printf '{"name":'; head -c 50000 /dev/zero | tr '\0' '['; head -c 50000 /dev/zero | tr '\0' ']'; printf '}\n'; } \
  > "$dir/run_json_deep/run.json"
# opening a pipe for reading waits for a writer forever
case_ run_json_fifo 0 "run.json is not a regular file"
goods 0 10 >> "$ev"
rm "$run/run.json"; mkfifo "$run/run.json"
case_ events_is_a_folder 0 "events.jsonl is not a regular file"
rm "$ev"; mkdir "$ev"
echo "wrote $(wc -l < "$dir/expected") damaged run folders into $dir"
