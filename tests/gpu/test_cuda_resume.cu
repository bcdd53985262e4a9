// GPU test of --resume: a model on the GPU whose optimizer exists before the checkpoint is
// loaded (as every chapter builds them) must keep training after the load. The loaded values
// go *into* the parameters the optimizer holds (Module::load_state copies into the slot); a
// new tensor in the slot would leave the optimizer stepping tensors that no backward reaches
// again, and training would silently stop.
//
//   1. N + M steps straight on the GPU                    -> losses L, final state S
//   2. N steps, save a checkpoint; a fresh model with other weights on the GPU, its optimizer,
//      load the checkpoint, M more steps                  -> the same M losses, bit for bit
//      (the GPU kernels sum in a fixed order: same inputs, same bits), and the same state S
//   3. after the load, the optimizer's parameters are the module's own tensors
// For SGD with momentum (a narrow ResNet-18: BatchNorm buffers too) and AdamW (an MLP).
#include "tests/gpu/gpu_test.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/data/loader.h"
#include "framework/nn/models/mlp.h"
#include "framework/nn/models/resnet.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/step.h"

using namespace hg;
namespace fs = std::filesystem;

namespace {

struct Setup {
  nn::ModulePtr model;
  std::unique_ptr<optim::Optimizer> opt;
  Setup(const std::string& kind, uint64_t init_seed) {
    Generator gen(init_seed);
    if (kind == "resnet_sgd") model = nn::resnet18(gen, 1, 4, 4);
    else model = std::make_shared<nn::MLP>(gen, 64, 32, 16, 4);
    model->to(Device::CUDA);  // to the GPU first, then the optimizer: as the chapters do
    if (kind == "resnet_sgd") {
      optim::SGDOptions o;
      o.lr = 0.05;
      o.momentum = 0.9;
      o.weight_decay = 5e-4;
      opt = std::make_unique<optim::SGD>(model->parameters(), o);
    } else {
      optim::AdamOptions o;
      o.lr = 1e-3;
      o.weight_decay = 0.01;
      opt = std::make_unique<optim::AdamW>(model->parameters(), o);
    }
  }
};

std::vector<float> run_steps(Setup& s, DataLoader& loader, int steps) {
  std::vector<float> losses;
  Batch b;
  while (static_cast<int>(losses.size()) < steps) {
    if (!loader.next(b)) continue;  // end of an epoch: the loader moves on to the next
    losses.push_back(float(train::train_step(*s.model, *s.opt, b.images.to(Device::CUDA), b.labels).loss));
  }
  return losses;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.to(Device::CPU).contiguous(), cb = b.to(Device::CPU).contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

void run(hg::test::Checker& t) {
  data::SyntheticOptions so;
  so.n = 96;
  so.num_classes = 4;
  so.height = so.width = 8;
  so.seed = 3;
  const data::ImageDataset ds = data::make_synthetic(so);
  DataLoaderOptions lo;
  lo.batch_size = 16;
  lo.seed = 5;
  const int N = 4, M = 5;
  const fs::path dir = fs::temp_directory_path() / ("hg_gpu_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);

  for (const std::string kind : {"resnet_sgd", "mlp_adamw"}) {
    Setup straight(kind, 1);
    DataLoader l1(ds, lo);
    const std::vector<float> all = run_steps(straight, l1, N + M);

    Setup first(kind, 1);
    DataLoader l2(ds, lo);
    run_steps(first, l2, N);
    train::TrainingState st;
    st.step = N;
    st.epoch = l2.epoch();
    st.batch_in_epoch = l2.position() / lo.batch_size;
    st.loader = l2.state_json();
    const std::string path = (dir / (kind + ".ckpt")).string();
    train::save_training_checkpoint(path, *first.model, first.opt.get(), st);

    Setup resumed(kind, 2);  // other initial weights, on the GPU, optimizer already built
    const std::vector<Tensor> held = resumed.model->parameters();
    const train::TrainingState back = train::load_training_checkpoint(path, *resumed.model, resumed.opt.get());
    DataLoader l3(ds, lo);
    l3.set_state_json(back.loader);
    const std::vector<float> rest = run_steps(resumed, l3, M);

    const std::vector<Tensor> now = resumed.model->parameters();
    bool aliased = held.size() == now.size();
    for (size_t i = 0; aliased && i < now.size(); ++i) aliased = now[i].same(held[i]);
    t.expect(kind + ": the optimizer's parameters are still the module's after load_state", aliased);
    t.exact(kind + ": M steps after resume == steps N+1..N+M straight (losses)", rest,
            std::vector<float>(all.begin() + N, all.end()));
    const auto sa = straight.model->state(), sb = resumed.model->state();
    int differing = 0;
    std::string first_name;
    for (size_t i = 0; i < sa.size() && i < sb.size(); ++i)
      if (!same_bits(sa[i].tensor, sb[i].tensor) && differing++ == 0) first_name = sa[i].name;
    t.expect(kind + ": final model state bit-identical to the straight run", differing == 0 && sa.size() == sb.size(),
             differing ? std::to_string(differing) + " tensors differ, first " + first_name : "");
  }
  fs::remove_all(dir);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
