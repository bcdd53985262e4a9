#!/bin/sh
# file_index.sh LESSONS_DIR: every chapter's main.cpp opens with an index of its sections
# ("//   1. flags ..." or "// Sections: 1. ... 2. ..."), and its code has a marker for each
# ("// ---- 3. train", "// ---- 2-5. the experiments"). The two lists must be the same.
fail=0
for f in "$1"/[0-9][0-9]_*/main.cpp; do
  # the index: numbered items in the comment before the first #include
  index=$(sed '/^#include/q' "$f" | grep '^//' | grep -oE '(^//|Sections:|  ) *[0-9]+\. ' |
          grep -oE '[0-9]+' | sort -nu | tr '\n' ' ')
  # the markers: "// ---- N." or "// ---- N-M." (a range counts every number in it)
  marks=$(grep -oE '^ *// ---- [0-9]+(-[0-9]+)?\.' "$f" | grep -oE '[0-9]+(-[0-9]+)?' |
          awk -F- '{ hi = NF > 1 ? $2 : $1; for (i = $1; i <= hi; i++) print i }' | sort -nu | tr '\n' ' ')
  ch=$(basename "$(dirname "$f")")
  if [ "$index" = "$marks" ]; then echo "ok   $ch: sections $index"
  else echo "FAIL $ch: the index lists [$index], the code has markers [$marks]"; fail=1; fi
done
exit "$fail"
