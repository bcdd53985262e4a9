#!/bin/sh
# expect_rejected.sh REGEX GRADER — a wrong answer must be graded failing (exit code 1) with an
# explanation that matches REGEX (grep -E, on the output with its line wrapping undone), so
# each plausible mistake gets its own message. The grader runs with --quick (sampled sweeps)
# and a seed drawn here and printed: every run grades other inputs, and a failure can be
# repeated with the seed it printed (GRADER --quick --seed N).
regex="$1"; shift
seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
out=$("$@" --quick --seed "$seed" 2>&1); rc=$?
printf '%s\n(graded with --seed %s)\n' "$out" "$seed"
[ "$rc" -eq 1 ] || { echo "expect_rejected: exit code $rc, expected 1 (graded failing)"; exit 1; }
flat=$(printf '%s\n' "$out" | tr '\n' ' ' | tr -s ' ')
printf '%s\n' "$flat" | grep -Eq -- "$regex" || { echo "expect_rejected: nothing matches: $regex"; exit 1; }
echo "expect_rejected: rejected, and the explanation matches: $regex"
