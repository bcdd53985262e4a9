#!/bin/sh
# budgets.sh ROOT: the sizes a chapter must keep to be read in one sitting (DESIGN.md,
# "Chapters and measurements"):
#   README.md (top)          at most 250 lines
#   lessons/NN_*/README.md   at most 450 lines
#   lessons/NN_*/main.cpp    at most 600 lines
#   a function in lessons/   a body of at most 100 lines, counted as clang-tidy's
#                            readability-function-size counts them: the line of the closing
#                            brace less the line of the opening one (top-level functions:
#                            halfgrad does not indent a namespace's contents, so a function's
#                            closing brace is a "}" alone at the start of a line)
# Each file or function over its budget is one FAIL line naming it, its size and the budget.
root="${1:-.}"
fail=0
over() {  # over FILE LIMIT WHAT
  n=$(wc -l <"$1")
  if [ "$n" -gt "$2" ]; then echo "FAIL $1: $n lines, the budget of $3 is $2"; fail=1; fi
}
over "$root/README.md" 250 "the top README"
for f in "$root"/lessons/[0-9][0-9]_*/README.md; do over "$f" 450 "a chapter README"; done
for f in "$root"/lessons/[0-9][0-9]_*/main.cpp; do over "$f" 600 "a chapter's main.cpp"; done
# Functions: a signature starts at a line that begins with a name at column 0 and does not
# end a statement (";") or hold a whole one-line body; "struct", "class", "enum", "union",
# "namespace" and "extern" open no function, and a "};" closes a type or an initializer.
long=$(find "$root/lessons" \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print | sort |
  while read -r f; do
    awk -v file="$f" '
      /^(struct|class|enum|union|namespace|extern|template)[ <{]/ { start = 0; next }
      /^};/ { start = 0; next }
      /^}/ { if (start && open && NR - open > 100) print file ":" start ": " NR - open " lines: " sig
             start = 0; open = 0; next }
      /^[A-Za-z_]/ && !/;[ \t]*(\/\/.*)?$/ && !/\{.*\}[ \t]*(\/\/.*)?$/ { if (!start) { start = NR; sig = $0; open = 0 } }
      start && !open && /\{[ \t]*(\/\/.*)?$/ { open = NR }
    ' "$f"
  done)
if [ -n "$long" ]; then
  printf '%s\n' "$long" | sed 's/^/FAIL a function over 100 lines: /'
  fail=1
fi
[ "$fail" -eq 0 ] && echo "OK: every README, main.cpp and function in lessons/ is within its budget"
exit "$fail"
