#!/bin/bash
# readme_commands.sh LAB BUILD LESSONS [--skip REGEX] README... — every `./lab lesson` command
# of the READMEs' code blocks, as written, run in order in a fresh folder (a clone with its
# build, before anything ran: no runs/), as a student types them one after the other.
#
# A command must exit 0, or 3 where its README shows a run that diverges (chapters 08 and 11
# show one each); exit 2 is a refusal (most often "runs/NAME exists": two commands of the
# course writing the same run folder). Commands with `--device cuda` need a GPU and are
# skipped, those with `--hostfile` need the reader's machines and are skipped too, and so are
# those matching --skip REGEX (grep -E), each said in a line. Chapter 13's commands start
# mpirun (./lab sets what it needs as root); the MPI jobs keep their session folders in the
# test's own folder, so that they never race another test's MPI job over Open MPI's shared one.
# Transcripts (`$ ./lab lesson ...`, with the output under them) are not commands to run.
set -u
LAB="$1" BUILD="$2" LESSONS="$3"
shift 3
skip=""
if [ "${1:-}" = --skip ]; then skip="$2"; shift 2; fi
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
cp "$LAB" "$T/lab"
ln -s "$LESSONS" "$T/lessons"
export HG_BUILD_DIR="$BUILD" OMPI_MCA_orte_tmpdir_base="$T/ompi"
cd "$T" || exit 1

fail=0 ran=0
for readme in "$@"; do
  chapter=$(basename "$(dirname "$readme")")
  # The lines of fenced blocks that start with ./lab lesson, without a trailing # comment.
  commands=$(awk '/^```/ { inside = !inside; next }
                  inside && /^\.\/lab lesson / { sub(/[ \t]+#.*$/, ""); print }' "$readme")
  while IFS= read -r command; do
    [ -n "$command" ] || continue
    if [[ "$command" == *"--device cuda"* ]]; then echo "skip  $chapter: $command (needs a GPU)"; continue; fi
    if [[ "$command" == *"--hostfile"* ]]; then echo "skip  $chapter: $command (needs your machines)"; continue; fi
    if [ -n "$skip" ] && printf '%s\n' "$command" | grep -Eq -- "$skip"; then
      echo "skip  $chapter: $command (--skip: the long run)"
      continue
    fi
    start=$(date +%s)
    out=$(bash -c "$command" 2>&1 </dev/null)
    rc=$?
    seconds=$(( $(date +%s) - start ))
    ran=$((ran + 1))
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then
      echo "ok    $chapter: $command (exit $rc, ${seconds} s)"
    else
      echo "WRONG $chapter: $command: exit $rc"
      printf '%s\n' "$out" | tail -n 5 | sed 's/^/      /'
      fail=1
    fi
  done <<<"$commands"
done
echo "$ran commands ran; run folders made: $(ls runs 2>/dev/null | wc -l)"
[ "$ran" -gt 0 ] || { echo "no command found"; exit 1; }
exit $fail
