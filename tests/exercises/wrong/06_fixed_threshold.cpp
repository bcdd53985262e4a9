// A wrong answer: one threshold for every weight ("lr·g < 2^-18").
// expect: Your answer does not depend on w
#include <cmath>

#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) { return std::fabs(u) < 0x1p-18f; }
