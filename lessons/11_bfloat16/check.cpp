// Grades the chapter 11 exercise: student_float_to_bf16 and student_bf16_wins.
//
// Part 1 compares the conversion with halfgrad's (framework/dtype/bfloat16.h, tested
// against the hardware's rounding) on groups of inputs, easy first, then on every float32
// bit pattern, and explains the first mistake (truncation, a tie not sent to even, a NaN
// turned into inf, ...). Part 2 runs chapter 11's experiment with the learner's settings —
// the MLP, 5000 FashionMNIST images, one epoch, batch 128, SGD without momentum, F16
// autocast with a GradScaler and BF16 autocast without — and checks that F16 overflows
// where BF16 trains.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/autograd/grad_mode.h"
#include "framework/data/loader.h"
#include "framework/dtype/bfloat16.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/step.h"
#include "lessons/11_bfloat16/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::DType;
using hg::Tensor;

namespace {

// ---- part 1: the conversion ------------------------------------------------------------
float float_of(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }
double bf16_value(uint16_t magnitude) {  // 0x7f80 counts as 2^128 here
  return magnitude == 0x7f80 ? std::ldexp(1.0, 128) : double(hg::bf16_bits_to_float(magnitude));
}
// Right answer? A NaN may come back as any NaN with the right sign: fold() maps each of
// them to one value, and an answer is right when it folds to what the expected one folds to.
uint16_t fold(float x, uint16_t b) { return std::isnan(x) && is_bf16_nan(b) ? uint16_t((b & 0x8000) | 0x7fc0) : b; }
bool correct(float x, uint16_t got, uint16_t want) { return fold(x, got) == fold(x, want); }

std::string explain(float x, uint16_t got, uint16_t expected) {
  const std::string head = format("input %s: expected 0x%04x (%.9g), you gave 0x%04x (%.9g)\n",
                                  grader::show_float(x).c_str(), expected,
                                  double(hg::bf16_bits_to_float(expected)), got,
                                  double(hg::bf16_bits_to_float(got)));
  if (std::isnan(x))
    return head + "A NaN must stay a NaN. Its top 7 payload bits, all BF16 keeps, may be zero (here they are), "
                  "and an all-zero mantissa with the exponent all ones is inf. The hardware sets the top "
                  "mantissa bit (the \"quiet\" bit) of every NaN it converts.";
  if (std::isinf(x)) return head + "inf stays inf, with its sign.";
  if ((got & 0x8000) != (expected & 0x8000))
    return head + "The sign is wrong: it is bit 31 of the float and bit 15 of the BF16, for every input, zero "
                  "included.";
  const uint16_t want = expected & 0x7fff, gave = got & 0x7fff;
  const double ax = std::fabs(double(x));
  const uint16_t down = bf16_value(want) > ax ? uint16_t(want - 1) : want, up = uint16_t(down + 1);
  const bool tie = (bf16_value(down) + bf16_value(up)) / 2 == ax;
  if (want == 0x7f80)
    return head + "This float is within half a BF16 step of 2^128, past BF16's largest finite value "
                  "(3.3895e38): it rounds up to inf. The same rounding does it: no special case is needed.";
  if (gave == down && want == up)
    return head + (tie ? "An exact tie (the 16 bits that do not fit are exactly half, 0x8000) goes to the even "
                         "neighbour, the one whose last kept bit is 0: here the upper one."
                       : "You truncated: dropping the 16 low bits always rounds toward zero. Round to nearest: "
                         "when the dropped part is more than half a unit of the last kept bit, go one up. "
                         "(Plenty of real code truncates; it biases every value towards zero.)");
  if (gave == up && want == down)
    return head + (tie ? "An exact tie was rounded up, away from zero. Ties go to even: to the neighbour whose "
                         "last kept bit is 0, here the lower one."
                       : "Rounded up although the dropped part is less than half a unit.");
  return head + "BF16 keeps FP32's exponent as it is: the result is the top 16 bits, rounded. " +
         see("## Exercise");
}

struct Group {
  const char* name;
  std::vector<float> inputs;
};

std::vector<Group> make_groups() {
  std::vector<Group> g;
  g.push_back({"zeros, signs and simple values", {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f, -3.0f, 1.5f, 1000.0f,
                                                  65504.0f, 70000.0f, 1e-30f}});
  Group exact{"every BF16 value, given exactly as a float", {}};
  Group between{"rounding between neighbouring BF16 values", {}};
  Group ties{"ties (exactly half way) round to even", {}};
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    const float v = hg::bf16_bits_to_float(uint16_t(b));
    exact.inputs.push_back(v);
    exact.inputs.push_back(-v);
    const uint32_t lo = b << 16;
    for (uint32_t off : {0x4000u, 0xc000u, 0x7fffu, 0x8001u, 0xffffu}) {
      between.inputs.push_back(float_of(lo + off));
      between.inputs.push_back(-float_of(lo + off));
    }
    ties.inputs.push_back(float_of(lo + 0x8000u));
    ties.inputs.push_back(-float_of(lo + 0x8000u));
  }
  g.push_back(std::move(exact));
  g.push_back(std::move(between));
  g.push_back(std::move(ties));
  g.push_back({"the largest floats round up to inf", {float_of(0x7f7fffffu), float_of(0x7f7f8000u),
                                                      float_of(0x7f7f7fffu), -float_of(0x7f7fffffu)}});
  g.push_back({"inf and NaN", {INFINITY, -INFINITY, NAN, -NAN, float_of(0x7f800001u), float_of(0xff800001u),
                               float_of(0x7fc00000u), float_of(0x7f808000u)}});
  return g;
}

// The sweep's reference: round the low 16 bits away, ties to even, in one addition (a carry
// into the exponent is right, and FLT_MAX becomes inf by itself); NaN gets the quiet bit.
// main() first checks it against halfgrad's conversion, so the sweep rests on that.
uint16_t fast_bf16(uint32_t u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) != 0) return uint16_t((u >> 16) | 0x0040);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

// ---- part 2: the run ----------------------------------------------------------------------
struct RunResult {
  int steps = 0, skipped = 0, nonfinite_losses = 0;
  double accuracy = 0;
};

// Chapter 11's loop: MLP, one epoch, batch 128, SGD without momentum, seed 0.
RunResult train(DType low, const Bf16Run& settings, const hg::data::ImageDataset& train_ds,
                const hg::data::ImageDataset& test_ds) {
  hg::Generator gen(0);
  hg::nn::ModulePtr model = hg::nn::make_model("mlp", gen);
  hg::optim::SGD opt(model->parameters(), {.lr = settings.lr, .momentum = 0.0});
  hg::amp::GradScaler scaler(hg::amp::ScaleRule{}, /*enabled=*/low == DType::F16);
  hg::DataLoader loader(train_ds, {128, true, false, 0});
  RunResult r;
  hg::Batch batch;
  while (loader.next(batch)) {
    opt.zero_grad();
    Tensor loss;
    {
      hg::amp::Autocast ac(low);
      loss = hg::cross_entropy((*model)(hg::mul(batch.images, settings.input_scale)), batch.labels);
    }
    scaler.scale(loss).backward();
    r.skipped += !scaler.step(opt);
    scaler.update();
    r.nonfinite_losses += !std::isfinite(loss.item());
    ++r.steps;
  }
  hg::NoGradGuard no_grad;
  model->eval();
  std::vector<float> px(test_ds.images.begin(), test_ds.images.end());
  Tensor x = Tensor::from_vector(px, {test_ds.n, test_ds.channels, test_ds.height, test_ds.width});
  hg::amp::Autocast ac(low);
  const auto pred = hg::train::argmax_classes((*model)(hg::mul(x, settings.input_scale)));
  int right = 0;
  for (int64_t i = 0; i < test_ds.n; ++i) right += pred[i] == test_ds.labels[i];
  r.accuracy = double(right) / double(test_ds.n);
  return r;
}

// Part 1: student_float_to_bf16 against halfgrad's conversion.
void grade_conversion(grader::Grader& g) {
  // Part 1, easy to hard; a mistake stops the rest of part 1. A group's inputs are asked in
  // an order drawn from the grading's seed; the sweep's sample (--quick) starts at a block
  // drawn from it.
  g.stop_at_first_failure(true);
  const std::vector<Group> groups = make_groups();
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& group = groups[k];
    g.check(format("BF16: %s (%zu inputs)", group.name, group.inputs.size()), [&]() -> std::string {
      const std::vector<uint16_t> answers =
          g.answers(group.inputs, k, [](float x) { return student_float_to_bf16(x); });
      for (size_t i = 0; i < group.inputs.size(); ++i) {
        const float x = group.inputs[i];
        const uint16_t want = hg::float_to_bf16_bits(x);
        if (!correct(x, answers[i], want)) return explain(x, answers[i], want);
      }
      return "";
    });
  }
  const int64_t stride = g.quick() ? 64 : 1;
  g.check(g.quick() ? "BF16: every 64th block of float32 bit patterns (67,108,864 inputs, --quick)"
                    : "BF16: every float32 bit pattern (4,294,967,296 inputs)", [&]() -> std::string {
    for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 251) {  // the sweep's reference is halfgrad's
      const float x = float_of(uint32_t(u));
      if (!correct(x, fast_bf16(uint32_t(u)), hg::float_to_bf16_bits(x)))
        return format("internal: the sweep's reference disagrees with hg::float_to_bf16_bits at 0x%08x",
                      uint32_t(u));
    }
    const auto bad = grader::first_wrong_float(
        g, stride, [](float x) { return student_float_to_bf16(x); },
        [](const float* in, uint16_t* out, size_t n) {
          for (size_t i = 0; i < n; ++i) {
            uint32_t u;
            std::memcpy(&u, &in[i], 4);
            out[i] = fast_bf16(u);
          }
        },
        [](float x, uint16_t b) { return fold(x, b); });
    if (!bad) return "";
    const float x = float_of(bad->bits);
    return explain(x, bad->answer, hg::float_to_bf16_bits(x));
  });
  g.stop_at_first_failure(false);
}

// Part 2: student_bf16_wins, chapter 11's experiment with the learner's settings.
void grade_experiment(grader::Grader& g) {
  // Part 2: one experiment, two checks. The learner's settings come from a child; the two
  // runs are the grader's own, made here at the first of the two checks.
  RunResult f16, bf16;
  Bf16Run settings{0, 0};
  std::string setup_error;
  bool made = false;
  auto experiment = [&] {
    if (std::exchange(made, true)) return;
    try {
      settings = g.run([] { return student_bf16_wins(); });
      const std::string dir = hg::data::fashion_mnist_dir("");
      auto train_ds = hg::data::load_fashion_mnist(dir, true, 5000);
      auto test_ds = hg::data::load_fashion_mnist(dir, false, 2000);
      hg::data::normalize(train_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
      hg::data::normalize(test_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
      if (!(settings.input_scale > 0) || !(settings.lr > 0))
        throw std::invalid_argument(format("input_scale %g and lr %g must both be positive", settings.input_scale,
                                           settings.lr));
      f16 = train(DType::F16, settings, train_ds, test_ds);
      bf16 = train(DType::BF16, settings, train_ds, test_ds);
    } catch (const grader::Failed& e) {  // from the learner's code
      setup_error = e.what();
      if (e.timed_out()) throw;  // the check after it is not run
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
  };
  auto run = [&] { return format("--input-scale %g --lr %g: ", settings.input_scale, settings.lr); };
  const auto f16_failed = [&] { return 8 * (f16.skipped + f16.nonfinite_losses) >= f16.steps; };
  g.check("your run: F16 AMP loses at least 1 step in 8 to overflow", [&]() -> std::string {
    experiment();
    if (!setup_error.empty()) return "the run could not be made: " + setup_error;
    if (f16_failed()) return "";
    return run() + format("F16 AMP skipped %d of %d steps and had %d inf/NaN losses (accuracy %.4f): it coped.\n",
                        f16.skipped, f16.steps, f16.nonfinite_losses, f16.accuracy) +
           "F16 overflows where values pass 65504. Gradients: the GradScaler starts at 2^16 and halves the scale "
           "(skipping that batch) each time S·g overflows, until S·g fits; the larger the gradients, the more "
           "batches that costs. Activations: when the forward pass itself passes 65504 the loss is inf, and no "
           "scaler helps. Both grow with the size of the inputs. " + see("## Where scaling inputs goes");
  });
  g.check("the same run in BF16: every loss finite, accuracy at least 0.5 and 0.02 above F16's",
          [&]() -> std::string {
            experiment();
            if (!setup_error.empty()) return "the run could not be made: " + setup_error;
            const std::string both = run() + format("F16 accuracy %.4f (%d of %d steps skipped), BF16 accuracy "
                                                  "%.4f (%d of %d losses inf or NaN).\n", f16.accuracy,
                                                  f16.skipped, f16.steps, bf16.accuracy, bf16.nonfinite_losses,
                                                  bf16.steps);
            if (bf16.nonfinite_losses > 0)
              return both + "BF16 blew up too. It removes the 65504 ceiling, not instability: inputs K times "
                            "larger make the gradients of the first layer K times larger, and lr·g with them. "
                            "Give it a learning rate that suits inputs that large.";
            if (bf16.accuracy < 0.5 || bf16.accuracy < f16.accuracy + 0.02)
              return both + (f16_failed()
                                 ? "BF16 did not learn enough in one epoch: is the learning rate so small that "
                                   "the steps barely move the weights?"
                                 : "F16 trained as well: the run must be one where F16 overflows (see the check "
                                   "above).");
            return "";
          });
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"11", "F32 -> BF16 rounding, and a run BF16 survives", "11_bfloat16", "Exercise"}, argc, argv);
  g.own_code_only({{"hg::float_to_bf16_bits", "halfgrad's own F32 -> BF16 conversion"},
                   {"hg::bfloat16::bfloat16(float)", "the hg::bfloat16 constructor, halfgrad's conversion"},
                   {"hg::convert_bits", "halfgrad's conversion between any two formats"},
                   {"hg::encode", "halfgrad's rounding of a value into any format"},
                   {"hg::cast", "the tensor cast, which rounds with halfgrad's conversion"},
                   {"hg::Tensor::to", "the tensor cast, which rounds with halfgrad's conversion"},
                   {"hg::", "a function of halfgrad: the conversion is written with the bits of x alone"},
                   {"__truncsfbf2", "the compiler's __bf16 conversion"}},
                  {{"vcvtneps2bf16", "the CPU's AVX-512 BF16 conversion"},
                   {"vcvtne2ps2bf16", "the CPU's AVX-512 BF16 conversion"}});

  grade_conversion(g);
  grade_experiment(g);
  return g.finish();
}
