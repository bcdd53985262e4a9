#!/bin/sh
# fact.sh README [-e TEXT]... [-r TEXT]... [-x TEXT]... [-c CODE] -- COMMAND [ARGS...]
# A chapter's stated fact and the program that prints it, checked together: COMMAND runs
# (its exit code must be CODE, 0 unless told) and every -e TEXT (a fixed string) must appear
# in its output AND in README (the chapter's pasted output or its prose); no -x TEXT may
# appear in either; -r TEXT is prose the README must hold (no program prints it). README "-"
# checks the output only.
readme="$1"; shift
want=""; prose=""; never=""; code=0
nl='
'
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    -e) want="$want$2$nl"; shift 2 ;;
    -r) prose="$prose$2$nl"; shift 2 ;;
    -x) never="$never$2$nl"; shift 2 ;;
    -c) code="$2"; shift 2 ;;
    *) echo "fact.sh: unknown argument '$1'"; exit 2 ;;
  esac
done
[ "${1:-}" = "--" ] || { echo "fact.sh: missing -- before the command"; exit 2; }
shift
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
echo "---- checks ($*)"
fail=0
[ "$rc" -eq "$code" ] || { echo "FAIL exit code $rc, expected $code"; fail=1; }
if [ "$readme" != "-" ] && [ ! -f "$readme" ]; then echo "FAIL no such README: $readme"; exit 1; fi
old_ifs=$IFS; IFS=$nl
for t in $want; do
  printf '%s\n' "$out" | grep -qF -- "$t" || { echo "FAIL the program does not print: $t"; fail=1; }
  [ "$readme" = "-" ] || grep -qF -- "$t" "$readme" || { echo "FAIL $readme does not say: $t"; fail=1; }
done
for t in $prose; do
  grep -qF -- "$t" "$readme" || { echo "FAIL $readme does not say: $t"; fail=1; }
done
for t in $never; do
  printf '%s\n' "$out" | grep -qF -- "$t" && { echo "FAIL the program prints: $t"; fail=1; }
  [ "$readme" = "-" ] || ! grep -qF -- "$t" "$readme" || { echo "FAIL $readme says: $t"; fail=1; }
done
IFS=$old_ifs
[ "$fail" -eq 0 ] && echo "OK: every fact is printed and stated"
exit "$fail"
