#include "datasets/fashion_mnist.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>

#include "datasets/idx.h"
#include "datasets/paths.h"

namespace hg::data {

const std::array<const char*, 10>& fashion_mnist_class_names() {
  static const std::array<const char*, 10> names = {"T-shirt/top", "Trouser", "Pullover",
                                                    "Dress",       "Coat",    "Sandal",
                                                    "Shirt",       "Sneaker", "Bag",
                                                    "Ankle boot"};
  return names;
}

static bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

static bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string find_idx_file(const std::string& dir, const std::string& stem) {
  // "train-images-idx3-ubyte" → also "train-images.idx3-ubyte".
  std::string dotted = stem;
  if (auto pos = dotted.rfind("-idx"); pos != std::string::npos) dotted[pos] = '.';
  // Whatever exists under the name is taken, a folder or a FIFO too: the reader then says
  // what is wrong with it, which beats "not found" for a path that is there.
  for (const std::string& name : {stem + ".gz", stem, dotted + ".gz", dotted}) {
    const std::string path = dir + "/" + name;
    if (exists(path)) return path;
  }
  return "";
}

static std::string missing_message(const std::string& dir, const std::string& stem) {
  const std::string where = is_directory(dir) ? fmt::format("no {0}.gz or {0} in {1}", stem, dir)
                            : exists(dir)       ? fmt::format("{} is not a folder", dir)
                                                : fmt::format("folder {} does not exist", dir);
  // Say where the folder name came from: a stale HG_DATA is a classic surprise.
  const char* env = std::getenv("HG_DATA");
  const std::string origin = dir == kDebianFashionMnistDir ? "the default folder of Debian's package"
                             : (env && dir == env)          ? "set by HG_DATA"
                                                            : "given with --data";
  return fmt::format(
      "FashionMNIST not found: {} ({}).\n"
      "  Install it with `sudo apt-get install dataset-fashion-mnist` (or `./lab setup`),\n"
      "  or point to a folder holding the four IDX files with --data DIR or HG_DATA=DIR.",
      where, origin);
}

ImageDataset load_fashion_mnist(const std::string& dir, bool train, int64_t limit) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_stem = prefix + "-images-idx3-ubyte";
  const std::string labels_stem = prefix + "-labels-idx1-ubyte";
  const std::string images_path = find_idx_file(dir, images_stem);
  if (images_path.empty()) throw std::runtime_error(missing_message(dir, images_stem));
  const std::string labels_path = find_idx_file(dir, labels_stem);
  if (labels_path.empty()) throw std::runtime_error(missing_message(dir, labels_stem));

  // Both headers first: shapes, counts and emptiness are decided before any pixel is read.
  IdxReader images_file(images_path), labels_file(labels_path);
  const IdxHeader& ih = images_file.header();
  const IdxHeader& lh = labels_file.header();

  // The IDX reader checked each file against its own header; now check the headers against
  // what FashionMNIST is: (N, 28, 28) u8 images and (N) u8 labels in 0..9, N ≥ 1.
  if (ih.type != IdxType::U8 || ih.dims.size() != 3 || ih.dims[1] != 28 || ih.dims[2] != 28) {
    std::string shape;
    for (size_t d = 0; d < ih.dims.size(); ++d) shape += (d ? ", " : "") + std::to_string(ih.dims[d]);
    throw std::runtime_error(fmt::format(
        "{}: wrong dimensions at byte offset 2: expected (N, 28, 28) of u8, the header says ({}) of {}",
        images_file.name(), shape, idx_type_name(ih.type)));
  }
  if (lh.type != IdxType::U8 || lh.dims.size() != 1)
    throw std::runtime_error(fmt::format(
        "{}: wrong dimensions at byte offset 2: expected (N) of u8, the header has {} dimension(s) of {}",
        labels_file.name(), lh.dims.size(), idx_type_name(lh.type)));
  if (ih.dims[0] == 0)
    throw std::runtime_error(fmt::format("{}: holds 0 images (the header's first dimension at byte "
                                         "offset 4 is 0); a dataset needs at least one",
                                         images_file.name()));
  if (ih.dims[0] != lh.dims[0])
    throw std::runtime_error(fmt::format("{} holds {} images but {} holds {} labels",
                                         images_path, ih.dims[0], labels_path, lh.dims[0]));

  const IdxArray images = images_file.read();
  const IdxArray labels = labels_file.read();
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= 10)
      throw std::runtime_error(fmt::format("{}: label {} at byte offset {} is not a class 0..9",
                                           labels_file.name(), labels.data[i],
                                           labels.data_offset + i));

  ImageDataset ds;
  ds.n = images.dims[0];
  if (limit > 0 && limit < ds.n) ds.n = limit;
  ds.channels = 1;
  ds.height = 28;
  ds.width = 28;
  ds.num_classes = 10;
  for (const char* name : fashion_mnist_class_names()) ds.class_names.push_back(name);
  const int64_t pixels = ds.n * 28 * 28;
  ds.images.resize(size_t(pixels));
  for (int64_t i = 0; i < pixels; ++i) ds.images[i] = float(images.data[i]) / 255.0f;
  ds.labels.assign(labels.data.begin(), labels.data.begin() + ds.n);
  return ds;
}

}  // namespace hg::data
