#!/bin/sh
# lab_ranks.sh LAB BUILD_DIR SCRATCH — `./lab lesson 13 --ranks N [--hostfile FILE]`:
#   bad launcher flags: one line naming the flag, exit code 2, nothing started (an empty
#   --ranks, a hostfile with a host this machine does not know, or with none);
#   --ranks 2: the lab starts mpirun itself (with --oversubscribe, and as root the two
#   variables OpenMPI wants), and both ranks train.
lab="$1"; build="$2"; scratch="$3"
mkdir -p "$scratch" && cd "$scratch" || exit 1
rm -rf runs
fail() { echo "FAILED: $1"; exit 1; }
# The launcher's variables must come from the lab, not from the test's environment.
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
refused() {  # EXPECTED-TEXT ARGS...
  want="$1"; shift
  out=$(HG_BUILD_DIR="$build" "$lab" lesson 13 "$@" 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "lab lesson 13 $*: exit code $rc, expected 2 ($out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "lab lesson 13 $*: expected one line, got: $out"
  case "$out" in *"$want"*) echo "ok   lab lesson 13 $* -> $out" ;; *) fail "lab lesson 13 $*: '$out' lacks '$want'" ;; esac
}
refused "--ranks must be a number of processes from 1 to 9999, got '0'" --ranks 0
refused "--ranks must be a number of processes from 1 to 9999, got 'two'" --ranks two
refused "--ranks needs a number of processes" --ranks
refused "--hostfile no-such-file: no such file" --ranks 2 --hostfile no-such-file
refused "--hostfile needs --ranks N" --hostfile "$lab"
refused "--ranks must be a number of processes from 1 to 9999, got ''" --ranks ''
printf 'localhost slots=1\nno-such-host.invalid slots=2\n' >unknown_host
refused "--hostfile unknown_host line 2: unknown host 'no-such-host.invalid'" --ranks 2 --hostfile unknown_host
printf '# nothing but a comment\n' >no_host
refused "--hostfile no_host names no machine" --ranks 2 --hostfile no_host
out=$(HG_BUILD_DIR="$build" "$lab" lesson 13 --ranks 2 --limit-train 256 --limit-test 100 --ring-mb 0.1 \
      --check-steps 0 --threads 1 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "lab lesson 13 --ranks 2: exit code $rc"
printf '%s\n' "$out" | grep -q "^RESULT model=mlp ranks=2 " || fail "no RESULT line for 2 ranks"
[ -s runs/13_mlp_2ranks/rank1/events.jsonl ] || fail "rank 1 wrote no run log"
echo "lab_ranks.sh: ok"
