#!/bin/bash
# lab_options.sh LAB — what ./lab does before it builds anything, on a scratch root with stub
# programs and a fake cmake that records its calls (nothing is built):
#   1. a build option left unset keeps what the build folder was configured with: no -DHG_CUDA
#      (or HG_VIEWER, HG_MPI, HG_NCCL) reaches cmake from build, test, view or bench unless it
#      is set; HG_CUDA=off reaches it as OFF; HG_CUDA=maybe is refused, exit 2, one line,
#      before cmake runs
#   2. ./lab view with a run folder that does not exist: refused, exit 2, before any build;
#      ./lab view alone in a clone without runs/ makes it and opens it
#   3. ./lab bench ../bench/cpu: refused, exit 2 (a benchmark is a name, not a path)
#   4. ./lab run through a symbolic link finds its chapters
set -u
LAB="$1"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp "$LAB" "$T/lab"
mkdir -p "$T/lessons/04_formats" "$T/build/lessons" "$T/build/viewer" "$T/bin" "$T/tests/bench" "$T/runs/a" "$T/elsewhere"
: >"$T/lessons/04_formats/main.cpp"
printf 'HG_CUDA:STRING=OFF\n' >"$T/build/CMakeCache.txt"
printf '#!/bin/sh\necho "chapter 04 stub"\n' >"$T/build/lessons/lesson_04"
printf '#!/bin/sh\necho "viewer stub $*"\n' >"$T/build/viewer/halfgrad-viewer"
printf '#!/bin/sh\necho "bench stub"\n' >"$T/tests/bench/cpu.sh"
printf '#!/bin/sh\necho "cmake $*" >>"$CMAKE_LOG"\n' >"$T/bin/cmake"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/ctest"
printf '#!/bin/sh\nprintf "install ok installed"\n' >"$T/bin/dpkg-query"  # every package present
chmod +x "$T/build/lessons/lesson_04" "$T/build/viewer/halfgrad-viewer" "$T/bin/"*
export PATH="$T/bin:$PATH" HG_BUILD_DIR="$T/build" CMAKE_LOG="$T/cmake.log"
unset HG_CUDA HG_VIEWER HG_MPI HG_NCCL HG_CUDA_ARCHS
run() { : >"$CMAKE_LOG"; out=$("$T/lab" "$@" 2>&1); rc=$?; }
refused() {  # TEXT ARGS...: exit 2, one line with TEXT, no cmake
  local want="$1"; shift
  run "$@"
  [ "$rc" -eq 2 ] || fail "lab $*: exit $rc, expected 2 ($out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "lab $*: more than one line: $out"
  [[ "$out" == *"$want"* ]] || fail "lab $*: '$out' lacks '$want'"
  [ ! -s "$CMAKE_LOG" ] || fail "lab $*: cmake ran before the refusal: $(cat "$CMAKE_LOG")"
  echo "ok: lab $* -> $out"
}

# 1. The configured options are kept; a bad value is refused.
for args in "build" "test" "view" "view $T/runs/a" "bench cpu"; do
  run $args
  [ -s "$CMAKE_LOG" ] || fail "lab $args did not configure ($out)"
  if grep -Eq -- "-DHG_(CUDA|VIEWER|MPI|NCCL)=" "$CMAKE_LOG"; then
    fail "lab $args passed an option nobody set, over the build folder's: $(head -n 1 "$CMAKE_LOG")"
  fi
done
echo "ok: build, test, view and bench leave the configured options alone"
HG_CUDA=off run build
grep -q -- "-DHG_CUDA=OFF" "$CMAKE_LOG" || fail "HG_CUDA=off did not reach cmake as OFF: $(cat "$CMAKE_LOG")"
echo "ok: HG_CUDA=off reaches cmake as -DHG_CUDA=OFF"
HG_CUDA=maybe refused "HG_CUDA=maybe: must be AUTO, ON or OFF" build
HG_VIEWER=yes refused "HG_VIEWER=yes: must be AUTO, ON or OFF" view

# 2. A run folder that does not exist, before any build.
refused "view: $T/no-such-run is not a run folder" view "$T/no-such-run"

# 2b. ./lab view in a fresh clone (no runs/ yet) opens the viewer on a runs/ it makes, from the
# repository's root, where the Lab panel's live runs go.
rm -rf "$T/runs"
out=$(cd "$T/elsewhere" && "$T/lab" view 2>&1); rc=$?
[ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "viewer stub $T/runs" ] && [ -d "$T/runs" ] || fail "lab view without runs/: exit $rc: $out"
echo "ok: lab view without runs/ makes it and opens it"
mkdir -p "$T/runs/a"

# 3. A benchmark is a name.
refused "unknown benchmark '../bench/cpu'" bench ../bench/cpu

# 4. Through a symbolic link.
ln -s "$T/lab" "$T/elsewhere/lab"
out=$(cd / && "$T/elsewhere/lab" lesson 04 2>&1); rc=$?
[ "$rc" -eq 0 ] && [ "$out" = "chapter 04 stub" ] || fail "lab through a link: exit $rc: $out"
echo "ok: lab through a symbolic link runs chapter 04"
echo "lab_options.sh: ok"
