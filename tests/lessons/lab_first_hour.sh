#!/bin/sh
# lab_first_hour.sh ROOT: what ./lab does around the chapters, with stub programs in a scratch
# build folder (nothing is built or trained):
#  1. ./lab lesson runs a chapter with OMP_WAIT_POLICY=PASSIVE, as ./lab test does (a caller's
#     own setting wins);
#  2. viewer/screenshots.sh writes its pictures into BUILD/screenshots and leaves docs/images
#     as it was, unless given a folder.
set -u
ROOT="$1"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
B="$T/build"; mkdir -p "$B/lessons" "$B/viewer" "$T/bin"

# ---- 1. the wait policy of ./lab lesson -------------------------------------------------
printf '#!/bin/sh\necho "policy=${OMP_WAIT_POLICY:-unset}"\n' >"$B/lessons/lesson_04"
chmod +x "$B/lessons/lesson_04"
got=$(env -u OMP_WAIT_POLICY HG_BUILD_DIR="$B" "$ROOT/lab" lesson 04)
echo "./lab lesson 04 -> $got"
[ "$got" = "policy=PASSIVE" ] || { echo "FAIL ./lab lesson should set OMP_WAIT_POLICY=PASSIVE"; fail=1; }
got=$(OMP_WAIT_POLICY=ACTIVE HG_BUILD_DIR="$B" "$ROOT/lab" lesson 04)
echo "OMP_WAIT_POLICY=ACTIVE ./lab lesson 04 -> $got"
[ "$got" = "policy=ACTIVE" ] || { echo "FAIL the caller's OMP_WAIT_POLICY should win"; fail=1; }

# ---- 2. where the screenshots go --------------------------------------------------------
for n in 06 08 09 10 12; do printf '#!/bin/sh\necho "RESULT stub"\n' >"$B/lessons/lesson_$n"; chmod +x "$B/lessons/lesson_$n"; done
# chapter 14 prints a table row instead of a RESULT line
printf '#!/bin/sh\necho "delayed stub"\n' >"$B/lessons/lesson_14"; chmod +x "$B/lessons/lesson_14"
cat >"$B/viewer/halfgrad-viewer" <<'V'
#!/bin/sh
# stub viewer: --screenshot FILE writes FILE; --make-demo-runs DIR makes DIR
while [ $# -gt 0 ]; do
  case "$1" in
    --screenshot) echo png >"$2"; shift ;;
    --make-demo-runs) mkdir -p "$2"; shift ;;
  esac
  shift
done
V
chmod +x "$B/viewer/halfgrad-viewer"
printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in -a) shift ;; -s) shift 2 ;; *) break ;; esac; done\nexec "$@"\n' >"$T/bin/xvfb-run"
chmod +x "$T/bin/xvfb-run"
before=$(cd "$ROOT/docs/images" && ls -l --time-style=+%s.%N 2>/dev/null | md5sum)
PATH="$T/bin:$PATH" bash "$ROOT/viewer/screenshots.sh" "$B" >"$T/shots.log" 2>&1 || { cat "$T/shots.log"; echo "FAIL screenshots.sh failed"; fail=1; }
after=$(cd "$ROOT/docs/images" && ls -l --time-style=+%s.%N 2>/dev/null | md5sum)
n=$(ls "$B/screenshots"/viewer_*.png 2>/dev/null | wc -l)
echo "screenshots.sh BUILD -> $n pictures in BUILD/screenshots"
[ "$n" -ge 11 ] || { echo "FAIL expected the pictures in $B/screenshots"; fail=1; }
[ "$before" = "$after" ] || { echo "FAIL docs/images changed"; fail=1; }
mkdir "$T/asked"
PATH="$T/bin:$PATH" bash "$ROOT/viewer/screenshots.sh" "$B" "$T/asked" >/dev/null 2>&1
n=$(ls "$T/asked"/viewer_*.png 2>/dev/null | wc -l)
echo "screenshots.sh BUILD DIR -> $n pictures in DIR"
[ "$n" -ge 11 ] || { echo "FAIL expected the pictures in the folder asked for"; fail=1; }

[ "$fail" -eq 0 ] && echo "OK"
exit "$fail"
