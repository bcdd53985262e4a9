#!/bin/sh
# vet_exercise.sh — the build step between compiling a learner's exercise.cpp and linking its
# grader (lessons/CMakeLists.txt, hg_add_grader; lessons/grader/grader.h says why).
#
#   vet_exercise.sh OUT_OBJECT OUT_SOURCE EXERCISE_CPP EXERCISE_OBJECT CHECK_OBJECT SOLUTION_CPP -- CXX FLAGS...
#
# SOLUTION_CPP is the chapter's reference solution ("-" when there is none to compare with:
# the student edition has none, and the tests grade the solution itself).
#
# The grader runs the learner's code only in sandboxed children, so nothing of it may run in
# the grader's own process: not before main(), not in the grader's place. Refused:
#   1. an #include of a reference solution (lessons/*/solution/) or of any source file (.cpp,
#      .cc, .c, .cu): the compiler itself lists what it read (CXX FLAGS -M);
#   2. code that runs when the program starts or ends: sections .init_array, .ctors,
#      .preinit_array, .fini_array, .dtors, .init, .fini (a global variable with a constructor,
#      a function marked constructor) and indirect functions (ifunc), whose resolvers run
#      while the program is loaded;
#   3. a definition that would be called in place of someone else's: a C name (extern "C":
#      malloc, write, fork, ...), operator new or delete, a non-inline function in namespace
#      std, __gnu_cxx, __cxxabiv1, hg, or anything in namespace grader;
#   4. the reference solution itself: exercise.cpp equal to SOLUTION_CPP once comments and
#      white space are taken out of both (the compiler's own tokenizer, CXX -fpreprocessed).
# Writes OUT_SOURCE (grader::kExerciseObject, the object's path for own_code_only(),
# grader::kExerciseRefusal, why it was refused or "", and grader::kExerciseSha256, the SHA-256
# of EXERCISE_CPP as it was compiled, for the teacher's table) and OUT_OBJECT: a copy of the object,
# or, when refused, a stub that defines only the names check.cpp calls (never run: the grader
# grades nothing then), so that none of the learner's object is linked.
#
# What this does not catch, said in grader.h: a solution's text pasted in with its names
# changed, an assembler .incbin, an inline function of halfgrad's headers redefined differently
# (check.cpp's objects are linked first, so theirs are the copies kept where they use one).
# Tools: $NM, $READELF (default: nm, readelf), c++filt beside $NM or on PATH.
set -u
[ $# -ge 8 ] && [ "$7" = -- ] || { echo "usage: vet_exercise.sh OUT_OBJECT OUT_SOURCE EXERCISE_CPP EXERCISE_OBJECT CHECK_OBJECT SOLUTION_CPP -- CXX FLAGS..." >&2; exit 2; }
out_object=$1 out_source=$2 source=$3 object=$4 check_object=$5 solution=$6
shift 7
NM=${NM:-nm} READELF=${READELF:-readelf}
CXXFILT=$(dirname "$NM")/c++filt
[ -x "$CXXFILT" ] || CXXFILT=c++filt
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
refusal=""
refuse() { [ -n "$refusal" ] || refusal=$1; }

# 1. What exercise.cpp includes (the first name after "x:" is exercise.cpp itself).
if "$@" -M -MT x "$source" >"$tmp/deps" 2>&1; then
  for f in $(sed -e 's/^x://' -e 's/\\$//' "$tmp/deps" | tr ' ' '\n' | sed -n '/./p' | sed 1d); do
    case "$(realpath -m -- "$f")" in
      */lessons/*/solution/*)
        refuse "exercise.cpp includes $f, a reference solution: the exercise is to write it yourself." ;;
      *.cpp|*.cc|*.cxx|*.c|*.cu)
        refuse "exercise.cpp includes the source file $f: #include is for headers (.h); the answer is written in exercise.cpp." ;;
    esac
  done
else
  refuse "the grader could not list the files exercise.cpp includes: $(head -c 300 "$tmp/deps" | tr '\n' ' ')"
fi

# 2. Code that runs when the program starts or ends.
"$READELF" -S -W "$object" >"$tmp/sections" 2>&1 || refuse "the grader could not read the sections of $object"
start_code=$(sed -n 's/^ *\[ *[0-9]*\] *//p' "$tmp/sections" | awk '
  $1 ~ /^\.(init_array|fini_array|preinit_array|ctors|dtors)(\.|$)/ || $1 == ".init" || $1 == ".fini" ||
  $2 == "INIT_ARRAY" || $2 == "FINI_ARRAY" || $2 == "PREINIT_ARRAY" { print $1; exit }')
[ -z "$start_code" ] || refuse "exercise.cpp has code that runs when the program starts or ends, outside any check (section $start_code: a global variable with a constructor or a destructor, or a function marked constructor). The grader runs exercise.cpp's code only inside its checks: move the variable into the function that uses it (a static local variable is built the first time it is used)."

# 3. Definitions in someone else's place: "BIND TYPE RAW DEMANGLED" per defined global symbol.
# C++ mangles the name of every function (but extern "C" ones and main) and of every variable
# outside the global namespace; a variable of the global namespace keeps its plain name, and
# is refused only where it could be the C library's (stdout, environ, a name with _ first).
"$READELF" -s -W "$object" >"$tmp/symbols" 2>&1 || refuse "the grader could not read the symbols of $object"
awk '$4 == "IFUNC" { print "IFUNC", $4, $8; next }
     $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") && $8 != "" { print $5, $4, $8 }' \
  "$tmp/symbols" >"$tmp/defined"
awk '{ print $3 }' "$tmp/defined" | "$CXXFILT" >"$tmp/demangled" 2>/dev/null || awk '{ print $3 }' "$tmp/defined" >"$tmp/demangled"
foreign=$(paste -d ' ' "$tmp/defined" "$tmp/demangled" | awk '{
  bind = $1; type = $2; raw = $3; dem = $0; sub(/^[^ ]* [^ ]* [^ ]* /, "", dem)
  if (bind == "IFUNC")
    { print dem " as an indirect function (ifunc), whose resolver runs while the program is loaded, before the grader: remove the ifunc attribute."; exit }
  libc_data = raw ~ /^_/ || raw ~ /^(stdin|stdout|stderr|environ|optarg|optind|opterr|optopt|daylight|timezone|tzname|signgam)$/
  if (raw !~ /^_Z/ && raw != "DW.ref.__gxx_personality_v0" && ((type != "OBJECT" && type != "TLS") || libc_data))
    { print "`" raw "` as a C name (extern \"C\", or a variable the C library has): such names belong to the C library and the C++ runtime, and the grader would use yours in their place. Give it a C++ name of your own."; exit }
  if (raw ~ /^_Z(nw|na|dl|da)/)
    { print dem ", which would allocate the memory of the whole program, the grader included: remove it."; exit }
  if (dem ~ /^((vtable|typeinfo|typeinfo name|VTT|guard variable) for )?grader::/ ||
      (bind == "GLOBAL" && dem ~ /^((vtable|typeinfo|typeinfo name|VTT|guard variable) for )?(std|__gnu_cxx|__cxxabiv1|hg)::/))
    { print dem ", a name of the C++ library, of halfgrad or of the grader: the grader would call yours in its place. Give it a name of your own (or make it static)."; exit }
}')
[ -z "$foreign" ] || refuse "exercise.cpp defines $foreign"

# 4. The reference solution, copied. Comments and white space do not count; names do.
tokens() { file=$1; shift; "$@" -fpreprocessed -dD -E -P "$file" 2>/dev/null | tr -d ' \t\r\n'; }
if [ "$solution" != - ] && [ -f "$solution" ]; then
  tokens "$source" "$@" >"$tmp/exercise.tokens"
  tokens "$solution" "$@" >"$tmp/solution.tokens"
  [ ! -s "$tmp/exercise.tokens" ] || ! cmp -s "$tmp/exercise.tokens" "$tmp/solution.tokens" \
    || refuse "exercise.cpp is the reference solution ($(basename "$(dirname "$(dirname "$solution")")")/solution/exercise.cpp) copied, comments and spaces aside: the exercise is to write it yourself."
fi
sha256=$(sha256sum "$source" 2>/dev/null | cut -c1-64)

# The outputs: the object (or the stub) and the source with the two strings.
if [ -z "$refusal" ]; then
  cp "$object" "$tmp/object.o"
else
  "$NM" -u "$check_object" | awk '{ print $NF }' | sort -u >"$tmp/needed"
  awk '{ print $3 }' "$tmp/defined" | sort -u >"$tmp/offered"
  { printf '\t.section .note.GNU-stack,"",%%progbits\n\t.text\n'
    comm -12 "$tmp/needed" "$tmp/offered" | awk '{ printf "\t.globl %s\n%s:\n\t.zero 4\n", $1, $1 }'
  } >"$tmp/stub.s"
  "$1" -c -x assembler "$tmp/stub.s" -o "$tmp/object.o" || exit 1
fi
c_string() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\n')"; }
{
  echo "// Generated by lessons/grader/vet_exercise.sh: the exercise's object file (own_code_only() reads it),"
  echo "// why the build refused to link it (\"\" when it did not) and the SHA-256 of the exercise.cpp graded."
  echo "namespace grader {"
  echo "extern const char* const kExerciseObject;"
  echo "extern const char* const kExerciseRefusal;"
  echo "extern const char* const kExerciseSha256;"
  echo "const char* const kExerciseObject = $(c_string "$object");"
  echo "const char* const kExerciseRefusal = $(c_string "$refusal");"
  echo "const char* const kExerciseSha256 = $(c_string "$sha256");"
  echo "}  // namespace grader"
} >"$tmp/source.cpp"
mv "$tmp/source.cpp" "$out_source" && mv "$tmp/object.o" "$out_object"
