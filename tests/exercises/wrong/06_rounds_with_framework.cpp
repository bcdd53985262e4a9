// A wrong answer: round w − u to F16 with halfgrad and compare.
// expect: exercise\.cpp calls hg::half::half\(float\)
#include "framework/dtype/half.h"
#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) { return float(hg::half(w - u)) == w; }
