#!/bin/sh
# expect_error.sh CODE PATTERN COMMAND [ARGS...]
# Passes when COMMAND exits with CODE and prints exactly one line that contains PATTERN
# (a fixed string). Used for the "bad input gives one clear line" tests.
code="$1"; pattern="$2"; shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq "$code" ] || { echo "expected exit code $code, got $rc"; exit 1; }
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "expected one line of output"; exit 1; }
printf '%s\n' "$out" | grep -qF -- "$pattern" || { echo "expected the message to contain: $pattern"; exit 1; }
