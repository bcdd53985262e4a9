#!/bin/sh
# grade_all.sh pass|fail SOURCE_DIR GRADER... — runs every grader (with --quick: sampled
# sweeps, and a seed drawn here, printed in its line) and prints one line each.
#   pass: every grader must pass (exit 0, score y of y)            — the reference solutions
#   fail: every grader must fail with score 0 (exit 1, 0 of y)     — the exercises as shipped,
#         and send the learner to a README heading that exists ("Read "## ..." in README.md")
want="$1"; root="$2"; shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
for grader in "$@"; do
  name=$(basename "$grader")
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  "$grader" --quick --seed "$seed" --result "$tmp/result" >"$tmp/out" 2>&1; rc=$?
  passed=$(sed -n 's/^passed=//p' "$tmp/result" 2>/dev/null)
  score=$(sed -n 's/^score=//p' "$tmp/result" 2>/dev/null)
  of=$(sed -n 's/^of=//p' "$tmp/result" 2>/dev/null)
  rm -f "$tmp/result"
  line="$name --seed $seed: exit $rc, score ${score:-?} of ${of:-?}"
  if [ "$want" = pass ]; then
    ok=$([ "$rc" -eq 0 ] && [ "$passed" = 1 ] && [ "$score" = "$of" ] && [ "${of:-0}" -gt 0 ] && echo yes)
  else
    ok=$([ "$rc" -eq 1 ] && [ "$passed" = 0 ] && [ "$score" = 0 ] && [ "${of:-0}" -gt 0 ] && echo yes)
    # The closing line: Read "## Heading" in lessons/NN_slug/README.md, ...
    heading=$(sed -n 's/^Read "\(#.*\)" in \(lessons\/[^ ]*README\.md\).*/\1/p' "$tmp/out")
    readme=$(sed -n 's/^Read "\(#.*\)" in \(lessons\/[^ ]*README\.md\).*/\2/p' "$tmp/out")
    if [ -z "$heading" ] || ! grep -qxF -- "$heading" "$root/$readme"; then
      line="$line; it sends the learner to \"$heading\" in $readme, which has no such heading"
      ok=no
    else
      line="$line; it sends the learner to \"$heading\""
    fi
  fi
  if [ "$ok" = yes ]; then echo "ok    $line"; else echo "WRONG $line (expected to $want)"; cat "$tmp/out"; bad=1; fi
done
exit $bad
