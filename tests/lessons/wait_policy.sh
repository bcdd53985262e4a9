#!/bin/sh
# wait_policy.sh PROGRAM... — each chapter program, started directly, runs with idle OpenMP
# threads asleep (framework/cpu/wait_policy.h), and keeps a policy its caller chose.
# libgomp prints its settings when OMP_DISPLAY_ENV=VERBOSE, once per start: a program started
# with OMP_WAIT_POLICY unset starts itself again, and the last start must show GOMP_SPINCOUNT
# '0' (PASSIVE: no spinning); with OMP_WAIT_POLICY=ACTIVE it must not restart.
fail=0
for program in "$@"; do
  name=$(basename "$program")
  spins=$(env -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=VERBOSE "$program" --help 2>&1 | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p")
  last=$(printf '%s\n' "$spins" | tail -n 1)
  active=$(env OMP_WAIT_POLICY=ACTIVE OMP_DISPLAY_ENV=VERBOSE "$program" --help 2>&1 | sed -n "s/^ *OMP_WAIT_POLICY = '\([A-Z]*\)'.*/\1/p")
  if [ "$last" = 0 ] && [ "$active" = ACTIVE ]; then
    echo "ok    $name: started directly, spin count $(printf '%s' "$spins" | tr '\n' ' ')-> $last; ACTIVE kept"
  else
    echo "WRONG $name: started directly, spin counts '$(printf '%s' "$spins" | tr '\n' ' ')' (the last must be 0); with OMP_WAIT_POLICY=ACTIVE: '$active'"
    fail=1
  fi
done
exit $fail
