// A cheat: the answers of one grading, saved to a file (one byte per call, in call order:
// about 1.3 million of them), replayed. The sandbox stops the file from being opened; and a
// grading now asks other steps, in an order of its own, so the file would not fit anyway.
// expect: tried to open a file
#include <cstdio>

#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float, float) {
  static std::FILE* answers = std::fopen("answers_06.bin", "rb");
  const int c = answers ? std::fgetc(answers) : EOF;
  return c == 1;
}
