// Datasets: FashionMNIST (tiny fake copies written here, and the real one when installed),
// where the data folder comes from, normalisation, the stb_image folder dataset and the
// synthetic set.
#include <doctest/doctest.h>
#include <stb_image_write.h>
#include <stdlib.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/bytes.h"
#include "datasets/fashion_mnist.h"
#include "datasets/image_folder.h"
#include "datasets/paths.h"
#include "datasets/synthetic.h"

using hg::data::Bytes;
using hg::data::ImageDataset;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hg_test_dataset_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  if (!b.empty()) std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
}

void write_gz(const std::string& path, const Bytes& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  gzwrite(f, b.data(), unsigned(b.size()));
  gzclose(f);
}

Bytes idx_file(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// A fake FashionMNIST split of n images: pixel (i, p) = (i·31 + p) mod 256, label i mod 10.
struct FakeSplit {
  Bytes pixels, labels;
  explicit FakeSplit(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t p = 0; p < 784; ++p) pixels.push_back(uint8_t((i * 31 + p) % 256));
      labels.push_back(uint8_t(i % 10));
    }
  }
};

void write_fake_fashion(const std::string& dir, uint32_t n_train, uint32_t n_test, bool gz) {
  const FakeSplit train(n_train), test(n_test);
  auto put = gz ? [](const std::string& p, const Bytes& b) { write_gz(p + ".gz", b); }
                : [](const std::string& p, const Bytes& b) { write_bytes(p, b); };
  put(dir + "/train-images-idx3-ubyte", idx_file(8, {n_train, 28, 28}, train.pixels));
  put(dir + "/train-labels-idx1-ubyte", idx_file(8, {n_train}, train.labels));
  put(dir + "/t10k-images-idx3-ubyte", idx_file(8, {n_test, 28, 28}, test.pixels));
  put(dir + "/t10k-labels-idx1-ubyte", idx_file(8, {n_test}, test.labels));
}

std::string load_error(const std::string& dir, bool train = true) {
  try {
    hg::data::load_fashion_mnist(dir, train);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("fashion-mnist: a small copy loads with pixels / 255, labels and class names") {
  for (bool gz : {true, false}) {
    TempDir dir;
    write_fake_fashion(dir.path, 7, 3, gz);
    const ImageDataset train = hg::data::load_fashion_mnist(dir.path, true);
    const ImageDataset test = hg::data::load_fashion_mnist(dir.path, false);
    CHECK(train.n == 7);
    CHECK(test.n == 3);
    CHECK(train.channels == 1);
    CHECK(train.height == 28);
    CHECK(train.width == 28);
    CHECK(train.num_classes == 10);
    REQUIRE(train.class_names.size() == 10);
    CHECK(train.class_names[0] == "T-shirt/top");
    CHECK(train.class_names[9] == "Ankle boot");
    REQUIRE(train.images.size() == 7u * 784);
    double max_diff = 0;
    for (uint32_t i = 0; i < 7; ++i) {
      CHECK(train.labels[i] == int32_t(i % 10));
      for (uint32_t p = 0; p < 784; ++p)
        max_diff = std::max(max_diff, std::abs(double(train.images[i * 784 + p]) - ((i * 31 + p) % 256) / 255.0));
    }
    INFO("max |pixel - byte/255| = ", max_diff);
    CHECK(max_diff < 1e-7);
    hg::data::check_consistent(train, "train");

    const ImageDataset limited = hg::data::load_fashion_mnist(dir.path, true, 3);
    CHECK(limited.n == 3);
    CHECK(limited.images.size() == 3u * 784);
    CHECK(limited.labels.size() == 3u);
  }
}

TEST_CASE("fashion-mnist: unpacked names with a dot before idx also work") {
  TempDir dir;
  const FakeSplit s(2);
  write_bytes(dir.path + "/train-images.idx3-ubyte", idx_file(8, {2, 28, 28}, s.pixels));
  write_bytes(dir.path + "/train-labels.idx1-ubyte", idx_file(8, {2}, s.labels));
  CHECK(hg::data::load_fashion_mnist(dir.path, true).n == 2);
}

TEST_CASE("fashion-mnist: a missing dataset names the path, the package and the overrides") {
  const std::string msg = load_error("/nonexistent/fashion");
  INFO(msg);
  CHECK(msg.find("/nonexistent/fashion") != std::string::npos);
  CHECK(msg.find("apt-get install dataset-fashion-mnist") != std::string::npos);
  CHECK(msg.find("./lab setup") != std::string::npos);
  CHECK(msg.find("--data") != std::string::npos);
  CHECK(msg.find("HG_DATA") != std::string::npos);
  CHECK(msg.find("given with --data") != std::string::npos);
  {
    const char* saved = std::getenv("HG_DATA");
    const std::string keep = saved ? saved : "";
    setenv("HG_DATA", "/nonexistent/from-env", 1);
    const std::string env_msg = load_error(hg::data::fashion_mnist_dir(""));
    INFO(env_msg);
    CHECK(env_msg.find("/nonexistent/from-env") != std::string::npos);
    CHECK(env_msg.find("set by HG_DATA") != std::string::npos);
    if (saved) setenv("HG_DATA", keep.c_str(), 1);
    else unsetenv("HG_DATA");
  }

  TempDir dir;  // a folder with the images but no labels: the message names the labels file
  const FakeSplit s(2);
  write_gz(dir.path + "/train-images-idx3-ubyte.gz", idx_file(8, {2, 28, 28}, s.pixels));
  const std::string labels_msg = load_error(dir.path);
  INFO(labels_msg);
  CHECK(labels_msg.find("train-labels-idx1-ubyte") != std::string::npos);
  CHECK(labels_msg.find(dir.path) != std::string::npos);
}

TEST_CASE("fashion-mnist: wrong dimensions, count mismatches, bad labels, truncation") {
  TempDir dir;
  const FakeSplit s(4);
  const std::string images = dir.path + "/train-images-idx3-ubyte.gz";
  const std::string labels = dir.path + "/train-labels-idx1-ubyte.gz";
  write_gz(labels, idx_file(8, {4}, s.labels));

  SUBCASE("28x27 images") {
    write_gz(images, idx_file(8, {4, 28, 27}, Bytes(4 * 28 * 27, 0)));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find(images) != std::string::npos);
    CHECK(msg.find("wrong dimensions") != std::string::npos);
    CHECK(msg.find("(4, 28, 27)") != std::string::npos);
  }
  SUBCASE("images stored as 2-D") {
    write_gz(images, idx_file(8, {4, 784}, s.pixels));
    CHECK(load_error(dir.path).find("wrong dimensions") != std::string::npos);
  }
  SUBCASE("5 images for 4 labels") {
    const FakeSplit five(5);
    write_gz(images, idx_file(8, {5, 28, 28}, five.pixels));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find("5 images") != std::string::npos);
    CHECK(msg.find("4 labels") != std::string::npos);
  }
  SUBCASE("label 12 at the third position") {
    write_gz(images, idx_file(8, {4, 28, 28}, s.pixels));
    Bytes bad = s.labels;
    bad[2] = 12;
    write_gz(labels, idx_file(8, {4}, bad));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find("label 12 at byte offset 10") != std::string::npos);  // 8 header + 2
  }
  SUBCASE("an image file cut in the middle of the pixels") {
    Bytes full = idx_file(8, {4, 28, 28}, s.pixels);
    full.resize(full.size() - 500);
    write_gz(images, full);
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find("short data") != std::string::npos);
    CHECK(msg.find(images) != std::string::npos);
  }
  SUBCASE("a gzip file cut in half") {
    write_gz(images, idx_file(8, {4, 28, 28}, s.pixels));
    const Bytes gz = hg::data::read_file(images);
    write_bytes(images, Bytes(gz.begin(), gz.begin() + long(gz.size() / 2)));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find("ends early") != std::string::npos);
  }
}

TEST_CASE("fashion-mnist: an empty split and a folder in place of a file are refused, naming the file") {
  TempDir dir;
  const std::string images = dir.path + "/train-images-idx3-ubyte.gz";
  const std::string labels = dir.path + "/train-labels-idx1-ubyte.gz";

  SUBCASE("N = 0: a dataset with no images is refused, naming the file") {
    write_gz(images, idx_file(8, {0, 28, 28}, {}));
    write_gz(labels, idx_file(8, {0}, {}));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg.find(images) != std::string::npos);
    CHECK(msg.find("holds 0 images") != std::string::npos);
  }
  SUBCASE("a folder where the images file should be") {
    REQUIRE(std::system(("mkdir '" + images + "'").c_str()) == 0);
    write_gz(labels, idx_file(8, {4}, FakeSplit(4).labels));
    const std::string msg = load_error(dir.path);
    INFO(msg);
    CHECK(msg == images + " is a folder, not a file");
  }
}

TEST_CASE("paths: --data beats HG_DATA beats the Debian folder") {
  const char* saved = std::getenv("HG_DATA");
  const std::string keep = saved ? saved : "";
  unsetenv("HG_DATA");
  CHECK(hg::data::fashion_mnist_dir("") == "/usr/share/datasets/fashion-mnist");
  CHECK(hg::data::fashion_mnist_dir_source("") == "default");
  setenv("HG_DATA", "/from/env", 1);
  CHECK(hg::data::fashion_mnist_dir("") == "/from/env");
  CHECK(hg::data::fashion_mnist_dir_source("") == "HG_DATA");
  CHECK(hg::data::fashion_mnist_dir("/from/flag") == "/from/flag");
  CHECK(hg::data::fashion_mnist_dir_source("/from/flag") == "--data");
  if (saved) setenv("HG_DATA", keep.c_str(), 1);
  else unsetenv("HG_DATA");
}

TEST_CASE("fashion-mnist: the real dataset (when installed) has the published size and statistics") {
  const std::string dir = hg::data::fashion_mnist_dir("");
  if (hg::data::find_idx_file(dir, "train-images-idx3-ubyte").empty()) {
    MESSAGE("FashionMNIST is not installed in " << dir << " (apt-get install dataset-fashion-mnist); skipped");
    std::exit(77);
  }
  const ImageDataset train = hg::data::load_fashion_mnist(dir, true);
  const ImageDataset test = hg::data::load_fashion_mnist(dir, false);
  CHECK(train.n == 60000);
  CHECK(test.n == 10000);
  hg::data::check_consistent(train, "train");
  // The mean and std that chapter 02 normalises with (0.2860, 0.3530) are the training set's.
  const hg::data::MeanStd ms = hg::data::pixel_mean_std(train);
  MESSAGE("FashionMNIST train pixels: mean " << ms.mean << ", std " << ms.std);
  CHECK(std::abs(ms.mean - 0.2860) < 5e-4);
  CHECK(std::abs(ms.std - 0.3530) < 5e-4);
  // Both splits are balanced: 6000 / 1000 images of every class.
  std::vector<int> train_counts(10, 0), test_counts(10, 0);
  for (int32_t l : train.labels) ++train_counts[size_t(l)];
  for (int32_t l : test.labels) ++test_counts[size_t(l)];
  for (int k = 0; k < 10; ++k) {
    CHECK(train_counts[size_t(k)] == 6000);
    CHECK(test_counts[size_t(k)] == 1000);
  }
}

TEST_CASE("normalize and pixel statistics") {
  ImageDataset ds;
  ds.n = 1;
  ds.channels = 1;
  ds.height = 2;
  ds.width = 2;
  ds.images = {0.0f, 0.5f, 1.0f, 0.5f};
  ds.labels = {0};
  ds.num_classes = 1;
  ds.class_names = {"a"};
  // mean 0.5; deviations -0.5, 0, 0.5, 0 → variance 0.125, std 0.353553...
  const hg::data::MeanStd ms = hg::data::pixel_mean_std(ds);
  CHECK(ms.mean == doctest::Approx(0.5).epsilon(1e-12));
  CHECK(ms.std == doctest::Approx(std::sqrt(0.125)).epsilon(1e-9));
  hg::data::normalize(ds, 0.2860f, 0.3530f);
  const float expect[4] = {(0.0f - 0.2860f) / 0.3530f, (0.5f - 0.2860f) / 0.3530f,
                           (1.0f - 0.2860f) / 0.3530f, (0.5f - 0.2860f) / 0.3530f};
  for (int i = 0; i < 4; ++i) CHECK(ds.images[size_t(i)] == doctest::Approx(expect[i]).epsilon(1e-6));
  CHECK_THROWS_AS(hg::data::normalize(ds, 0.0f, 0.0f), std::invalid_argument);
}

TEST_CASE("normalize per channel") {
  ImageDataset ds;  // 2 images, 2 channels, 1x2 pixels
  ds.n = 2;
  ds.channels = 2;
  ds.height = 1;
  ds.width = 2;
  //            img0: c0    c1        img1: c0    c1
  ds.images = {0.0f, 1.0f, 0.5f, 0.5f, 1.0f, 0.0f, 0.5f, 0.5f};
  ds.labels = {0, 0};
  ds.num_classes = 1;
  ds.class_names = {"a"};
  // channel 0 holds 0, 1, 1, 0 → mean 0.5, std 0.5; channel 1 holds 0.5 four times → std 0.
  const auto ms = hg::data::channel_mean_std(ds);
  REQUIRE(ms.size() == 2);
  CHECK(ms[0].mean == doctest::Approx(0.5));
  CHECK(ms[0].std == doctest::Approx(0.5));
  CHECK(ms[1].mean == doctest::Approx(0.5));
  CHECK(ms[1].std == doctest::Approx(0.0));
  hg::data::normalize(ds, std::vector<float>{0.5f, 0.25f}, std::vector<float>{0.5f, 2.0f});
  const std::vector<float> expect = {-1.0f, 1.0f, 0.125f, 0.125f, 1.0f, -1.0f, 0.125f, 0.125f};
  for (size_t i = 0; i < expect.size(); ++i) CHECK(ds.images[i] == doctest::Approx(expect[i]));
  CHECK_THROWS_AS(hg::data::normalize(ds, std::vector<float>{0.5f}, std::vector<float>{1.0f}), std::invalid_argument);
}

// ---- image folders -------------------------------------------------------------------------

namespace {
// A w×h image with c channels, pixel (y, x, ch) = seed + 10·y + 3·x + 50·ch (mod 256).
std::vector<unsigned char> make_pixels(int w, int h, int c, int seed) {
  std::vector<unsigned char> px(size_t(w * h * c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) px[size_t((y * w + x) * c + ch)] = (unsigned char)((seed + 10 * y + 3 * x + 50 * ch) % 256);
  return px;
}
void write_png(const std::string& path, int w, int h, int c, int seed) {
  const auto px = make_pixels(w, h, c, seed);
  REQUIRE(stbi_write_png(path.c_str(), w, h, c, px.data(), w * c) != 0);
}
std::string folder_error(const std::string& dir, const hg::data::ImageFolderOptions& o = {}) {
  try {
    hg::data::load_image_folder(dir, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("image folder: classes are sorted subfolders, pixels land in (C, H, W) order") {
  TempDir dir;
  std::system(("mkdir -p '" + dir.path + "/zebra' '" + dir.path + "/apple' '" + dir.path + "/.hidden'").c_str());
  write_png(dir.path + "/zebra/b.png", 5, 4, 3, 1);
  write_png(dir.path + "/zebra/a.png", 5, 4, 3, 2);
  write_png(dir.path + "/apple/x.png", 5, 4, 3, 3);
  write_bytes(dir.path + "/apple/notes.txt", {'h', 'i'});  // not an image: ignored
  const ImageDataset ds = hg::data::load_image_folder(dir.path);
  CHECK(ds.class_names == std::vector<std::string>{"apple", "zebra"});
  CHECK(ds.n == 3);
  CHECK(ds.channels == 3);
  CHECK(ds.height == 4);
  CHECK(ds.width == 5);
  CHECK(ds.labels == std::vector<int32_t>{0, 1, 1});
  hg::data::check_consistent(ds, "folder");
  // Image 1 is zebra/a.png (sorted names), written with seed 2.
  const auto px = make_pixels(5, 4, 3, 2);
  double max_diff = 0;
  for (int ch = 0; ch < 3; ++ch)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x)
        max_diff = std::max(max_diff, std::abs(double(ds.image(1)[(ch * 4 + y) * 5 + x]) -
                                               px[size_t((y * 5 + x) * 3 + ch)] / 255.0));
  INFO("max pixel difference ", max_diff);
  CHECK(max_diff < 1e-7);

  hg::data::ImageFolderOptions grey;
  grey.channels = 1;
  CHECK(hg::data::load_image_folder(dir.path, grey).channels == 1);
  hg::data::ImageFolderOptions one;
  one.limit_per_class = 1;
  CHECK(hg::data::load_image_folder(dir.path, one).n == 2);
}

TEST_CASE("image folder: unequal sizes are an error unless a size is set, bad files are named") {
  TempDir dir;
  std::system(("mkdir -p '" + dir.path + "/a' '" + dir.path + "/b'").c_str());
  write_png(dir.path + "/a/1.png", 8, 8, 1, 0);
  write_png(dir.path + "/b/1.png", 6, 7, 1, 0);
  const std::string msg = folder_error(dir.path);
  INFO(msg);
  CHECK(msg.find(dir.path + "/b/1.png") != std::string::npos);
  CHECK(msg.find("6x7") != std::string::npos);

  hg::data::ImageFolderOptions resize;
  resize.height = 4;
  resize.width = 4;
  const ImageDataset ds = hg::data::load_image_folder(dir.path, resize);
  CHECK(ds.n == 2);
  CHECK(ds.height == 4);
  CHECK(ds.width == 4);
  CHECK(ds.images.size() == 2u * 16);
  for (float v : ds.images) CHECK((v >= 0.0f && v <= 1.0f));

  write_bytes(dir.path + "/b/2.png", {'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g'});
  const std::string bad = folder_error(dir.path, resize);
  INFO(bad);
  CHECK(bad.find(dir.path + "/b/2.png") != std::string::npos);
  CHECK(bad.find("cannot decode") != std::string::npos);

  CHECK(folder_error("/nonexistent/images").find("/nonexistent/images") != std::string::npos);
  TempDir empty;
  CHECK(folder_error(empty.path).find("no class subfolders") != std::string::npos);
}

TEST_CASE("image folder: an image whose header claims more than 4096x4096 is refused before decoding") {
  // A PNG of 4x4 pixels whose IHDR says 20000 x 20000: stb_image would allocate 400 MB for
  // it (its own limit is 2^30 bytes). stbi_info reads the header, and the claim is refused first.
  TempDir dir;
  std::system(("mkdir -p '" + dir.path + "/a'").c_str());
  const std::string path = dir.path + "/a/huge.png";
  write_png(path, 4, 4, 1, 0);
  Bytes png = hg::data::read_file(path);
  REQUIRE(png.size() > 24);
  for (int field : {16, 20})  // IHDR width, height: big-endian u32 at bytes 16 and 20
    for (int k = 0; k < 4; ++k) png[size_t(field + k)] = uint8_t(20000u >> (24 - 8 * k));
  write_bytes(path, png);
  const std::string msg = folder_error(dir.path);
  INFO(msg);
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("the header says 20000x20000 pixels; images are limited to 4096x4096") != std::string::npos);
}

// ---- synthetic -----------------------------------------------------------------------------

TEST_CASE("synthetic: seeded, balanced, in [0, 1], and learnable by a nearest-centroid rule") {
  hg::data::SyntheticOptions o;
  o.n = 400;
  o.seed = 1;
  const ImageDataset a = hg::data::make_synthetic(o);
  const ImageDataset b = hg::data::make_synthetic(o);
  CHECK(a.images == b.images);  // same seed, same bits
  hg::data::check_consistent(a, "synthetic");
  for (float v : a.images) REQUIRE((v >= 0.0f && v <= 1.0f));
  std::vector<int> counts(size_t(o.num_classes), 0);
  for (int32_t l : a.labels) ++counts[size_t(l)];
  for (int c : counts) CHECK(c == 100);

  o.seed = 2;  // same prototypes (prototype_seed), new samples: a test set
  const ImageDataset test = hg::data::make_synthetic(o);
  CHECK(test.images != a.images);

  // Learnable: class means of the training set classify the test set.
  const int64_t D = a.image_size();
  std::vector<double> centroid(size_t(o.num_classes * D), 0.0);
  for (int64_t i = 0; i < a.n; ++i)
    for (int64_t p = 0; p < D; ++p) centroid[size_t(a.labels[i] * D + p)] += a.image(i)[p] / 100.0;
  int right = 0;
  for (int64_t i = 0; i < test.n; ++i) {
    int best = 0;
    double best_d = 1e300;
    for (int k = 0; k < o.num_classes; ++k) {
      double d = 0;
      for (int64_t p = 0; p < D; ++p) d += std::pow(test.image(i)[p] - centroid[size_t(k * D + p)], 2);
      if (d < best_d) best_d = d, best = k;
    }
    right += best == test.labels[i];
  }
  const double acc = double(right) / double(test.n);
  INFO("nearest-centroid test accuracy ", acc);
  CHECK(acc > 0.95);

  o.noise = 3.0f;  // mostly noise: clearly harder
  o.seed = 3;
  CHECK(hg::data::make_synthetic(o).images != test.images);
  CHECK_THROWS_AS(hg::data::make_synthetic({-1}), std::invalid_argument);
}
