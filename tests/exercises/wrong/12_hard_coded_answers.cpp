// A cheat: the answers to the configurations and parameter counts one grading asked for,
// looked up by the inputs. The inputs are drawn at grading time now, so the next grading
// asks for others, and the table has no answer for them.
// expect: \[WRONG\] the parameter count of a tied GPT.*you count no parameters
#include "lessons/12_memory_and_scale/exercise.h"

namespace {
struct Asked {
  int64_t n_layer, n_head, n_embd, block_size, vocab_size;
  bool tied;
  int64_t answer;
};
const Asked kCounts[] = {{2, 2, 16, 8, 11, true, 6896},   {3, 4, 32, 16, 29, true, 39616},
                         {1, 1, 8, 5, 7, true, 984},      {4, 2, 24, 12, 50, true, 30432},
                         {2, 2, 16, 8, 11, false, 7072},  {3, 4, 32, 16, 29, false, 40544}};
struct Bytes {
  int64_t params;
  hg::memory::OptimizerKind optimizer;
  hg::memory::Precision precision;
  ModelStates answer;
};
using hg::memory::OptimizerKind;
using hg::memory::Precision;
const Bytes kBytes[] = {
    {6896, OptimizerKind::SGD, Precision::FP32, {27584, 27584, 0}},
    {6896, OptimizerKind::SGDMomentum, Precision::FP32, {27584, 27584, 27584}},
    {6896, OptimizerKind::Adam, Precision::FP32, {27584, 27584, 55168}},
    {6896, OptimizerKind::SGD, Precision::Mixed, {13792, 41376, 27584}},
    {6896, OptimizerKind::SGDMomentum, Precision::Mixed, {13792, 41376, 55168}},
    {6896, OptimizerKind::Adam, Precision::Mixed, {13792, 41376, 82752}},
    {40544, OptimizerKind::Adam, Precision::FP32, {162176, 162176, 324352}},
    {40544, OptimizerKind::Adam, Precision::Mixed, {81088, 243264, 486528}}};
}  // namespace

int64_t student_gpt_parameters(const hg::nn::GPTConfig& c) {
  for (const Asked& a : kCounts)
    if (a.n_layer == c.n_layer && a.n_head == c.n_head && a.n_embd == c.n_embd && a.block_size == c.block_size &&
        a.vocab_size == c.vocab_size && a.tied == c.tied)
      return a.answer;
  return 0;
}

ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision) {
  for (const Bytes& b : kBytes)
    if (b.params == params && b.optimizer == optimizer && b.precision == precision) return b.answer;
  return {};
}

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
