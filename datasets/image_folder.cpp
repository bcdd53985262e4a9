#include "datasets/image_folder.h"

#include <dirent.h>
#include <fmt/format.h>
#include <stb_image.h>
#include <stb_image_resize.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace hg::data {

// Sorted names of the entries of `dir` that are directories (want_dirs) or regular files.
static std::vector<std::string> list_dir(const std::string& dir, bool want_dirs) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw std::runtime_error(fmt::format("cannot open image folder {}: {}", dir, std::strerror(errno)));
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;  // ".", "..", hidden files
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;
    if (want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

static bool is_image_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* known : {"png", "jpg", "jpeg", "bmp", "gif", "tga", "pnm", "ppm", "pgm", "psd", "hdr"})
    if (ext == known) return true;
  return false;
}

// The size an image file claims, checked before it is decoded: stb_image would allocate
// width × height × channels for whatever a (tiny, hostile) header says.
static void check_image_header(const std::string& path) {
  int w = 0, h = 0, c = 0;
  if (!stbi_info(path.c_str(), &w, &h, &c))
    throw std::runtime_error(fmt::format("{}: cannot decode image: {}", path, stbi_failure_reason()));
  if (w <= 0 || h <= 0 || w > kImageFolderMaxSide || h > kImageFolderMaxSide)
    throw std::runtime_error(fmt::format("{}: the header says {}x{} pixels; images are limited to "
                                         "{}x{}", path, w, h, kImageFolderMaxSide, kImageFolderMaxSide));
}

ImageDataset load_image_folder(const std::string& dir, const ImageFolderOptions& opt) {
  if (opt.channels < 0 || opt.channels > 4)
    throw std::invalid_argument(fmt::format("image folder: channels must be 0..4, got {}", opt.channels));
  if ((opt.height > 0) != (opt.width > 0))
    throw std::invalid_argument("image folder: set both height and width to resize, or neither");
  if (opt.height > kImageFolderMaxSide || opt.width > kImageFolderMaxSide)
    throw std::invalid_argument(fmt::format("image folder: resizing to {}x{} exceeds the limit of {}x{}",
                                            opt.width, opt.height, kImageFolderMaxSide, kImageFolderMaxSide));

  ImageDataset ds;
  ds.class_names = list_dir(dir, /*want_dirs=*/true);
  if (ds.class_names.empty())
    throw std::runtime_error(fmt::format(
        "image folder {} has no class subfolders (expected {}/<class>/<image files>)", dir, dir));
  ds.num_classes = int(ds.class_names.size());
  ds.height = opt.height;
  ds.width = opt.width;
  ds.channels = opt.channels;
  std::string first_file;  // the image that fixed the size, for messages

  for (int label = 0; label < ds.num_classes; ++label) {
    const std::string class_dir = dir + "/" + ds.class_names[label];
    int64_t taken = 0;
    for (const std::string& name : list_dir(class_dir, /*want_dirs=*/false)) {
      if (!is_image_name(name)) continue;
      if (opt.limit_per_class > 0 && taken == opt.limit_per_class) break;
      const std::string path = class_dir + "/" + name;
      check_image_header(path);
      if (int64_t(ds.labels.size()) == kImageFolderMaxImages)
        throw std::runtime_error(fmt::format("image folder {}: more than {} images, the limit", dir,
                                             kImageFolderMaxImages));
      int w = 0, h = 0, c_in_file = 0;
      // stb converts to `opt.channels` when it is non-zero; `c_in_file` is what the file has.
      std::unique_ptr<unsigned char, void (*)(void*)> pixels(
          stbi_load(path.c_str(), &w, &h, &c_in_file, opt.channels), stbi_image_free);
      if (!pixels)
        throw std::runtime_error(fmt::format("{}: cannot decode image: {}", path, stbi_failure_reason()));
      const int c = opt.channels ? opt.channels : c_in_file;
      if (ds.channels == 0) ds.channels = c;
      if (c != ds.channels)
        throw std::runtime_error(fmt::format(
            "{}: has {} channels but {} has {}; set ImageFolderOptions::channels to convert",
            path, c, first_file, ds.channels));
      if (first_file.empty()) first_file = path;

      const unsigned char* src = pixels.get();  // (h, w, c) interleaved
      std::vector<unsigned char> resized;
      if (opt.height > 0) {
        if (h != opt.height || w != opt.width) {
          resized.resize(size_t(opt.height) * opt.width * c);
          if (!stbir_resize_uint8(src, w, h, 0, resized.data(), opt.width, opt.height, 0, c))
            throw std::runtime_error(fmt::format("{}: resize to {}x{} failed", path, opt.width, opt.height));
          src = resized.data();
        }
      } else {
        if (ds.height == 0) {
          ds.height = h;
          ds.width = w;
        }
        if (h != ds.height || w != ds.width)
          throw std::runtime_error(fmt::format(
              "{}: is {}x{} but {} is {}x{}; image folders need equal sizes "
              "(or set ImageFolderOptions::height/width to resize)",
              path, w, h, first_file, ds.width, ds.height));
      }
      // (H, W, C) interleaved bytes → (C, H, W) floats in [0, 1].
      const int64_t hw = ds.height * ds.width;
      const size_t base = ds.images.size();
      ds.images.resize(base + size_t(hw * c));
      for (int64_t p = 0; p < hw; ++p)
        for (int ch = 0; ch < c; ++ch) ds.images[base + ch * hw + p] = src[p * c + ch] / 255.0f;
      ds.labels.push_back(label);
      ++taken;
    }
  }
  ds.n = int64_t(ds.labels.size());
  if (ds.n == 0)
    throw std::runtime_error(fmt::format("image folder {} has class subfolders but no image files", dir));
  return ds;
}

}  // namespace hg::data
