#!/bin/sh
# cited_sections.sh CHAPTER_DIR... — every README heading a grader's explanations cite exists:
# each see("## ...") in check.cpp is a heading of the chapter's README.md, and each
# see("## ...", "NN_slug") one of lessons/NN_slug/README.md. Headings are edited by hand;
# this keeps the pointers true. (The heading of each grader's closing line is checked by
# exercises_untouched_fail, on the grader's output.)
bad=0
for dir in "$@"; do
  lessons=$(dirname "$dir")
  grep -oE 'see\("#{2,3} [^"]+"(, "[0-9]{2}_[a-z0-9_]+")?\)' "$dir/check.cpp" | sort -u >"${TMPDIR:-/tmp}/cited.$$"
  while IFS= read -r call; do
    heading=$(printf '%s' "$call" | sed 's/^see("//; s/"[,)].*$//')
    slug=$(printf '%s' "$call" | sed -n 's/.*, "\([0-9][0-9]_[a-z0-9_]*\)")$/\1/p')
    readme="$dir/README.md"
    [ -n "$slug" ] && readme="$lessons/$slug/README.md"
    if grep -qxF -- "$heading" "$readme"; then
      echo "ok    $(basename "$dir")/check.cpp cites \"$heading\" of $(basename "$(dirname "$readme")")"
    else
      echo "WRONG $(basename "$dir")/check.cpp cites \"$heading\", which $readme does not have"
      bad=1
    fi
  done <"${TMPDIR:-/tmp}/cited.$$"
  rm -f "${TMPDIR:-/tmp}/cited.$$"
done
exit $bad
