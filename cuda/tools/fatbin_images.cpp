// fatbin_images: which GPU images did nvcc put in an object file or a static library?
//
//   ./build/cuda/fatbin_images build/cuda/libhg_cuda.a
//   09_mma_fp8.cu.o       PTX  compute_89
//   09_mma_fp8.cu.o       ELF  sm_89
//   ...
//
// One line per image: the archive member (or the file: an object or a linked program), the
// kind, the architecture. An ELF
// image (a "cubin") is machine code for exactly one GPU generation (sm_89 runs on sm_89 only);
// a PTX image is the portable assembly, which the driver compiles at load time for a GPU of
// that compute capability or newer. A GPU with neither for its kernel gets "no kernel image is
// available for execution on the device" at launch. cuobjdump --list-elf / --list-ptx answer
// the same question; this program needs no CUDA toolkit at all (the one on the build machines
// ships without cuobjdump), and the format it reads is small:
//
// Every file with device code holds one or more *fat binaries* (in an object file, the ELF
// section .nv_fatbin). A fat binary is
//   a header, 16 bytes    u32 magic 0xBA55ED50 | u16 version 1 | u16 header size 16 | u64 size of the rest
//   then entries, back to back, each a header and its payload:
//     offset  0  u16  kind          1 PTX, 2 ELF
//     offset  4  u32  header size   the payload starts there (64 or 80 bytes)
//     offset  8  u64  payload size  (padded to 8 bytes): the next entry starts after it
//     offset 28  u32  architecture  89 for sm_89 (ELF) or compute_89 (PTX)
// NVIDIA does not document this layout: it is cuobjdump's, as public reverse engineering
// describes it, checked on nvcc 13.0's output by tests/gpu/fp8_images.sh (which compares what
// this program lists with the architectures CMake asked for). A static library (.a) is an "ar"
// archive: a "!<arch>\n" line, then for each member a 60-byte text header (name, size) and
// its bytes; GNU ar keeps names longer than 15 characters in a member named "//".
//
// Exit status: 0 when every file was read (with or without images), 2 for a usage error or a
// file that cannot be read.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

template <class T>
T read_le(const std::vector<unsigned char>& bytes, size_t at) {  // little-endian, as x86 and the GPU store it
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= T(bytes[at + i]) << (8 * i);
  return v;
}

struct Image {
  bool elf;   // ELF (machine code) or PTX
  int arch;   // 89 for sm_89 / compute_89
};

// The fat binary starting at `at`, if a whole valid one starts there: its entries must chain
// exactly to its end. Returns false (and leaves `out` alone) otherwise: four bytes that happen
// to read 0xBA55ED50 inside some other data are not taken for a fat binary.
bool read_fatbin(const std::vector<unsigned char>& bytes, size_t at, size_t end, std::vector<Image>& out) {
  if (end - at < 16 || read_le<uint32_t>(bytes, at) != kFatbinMagic) return false;
  if (read_le<uint16_t>(bytes, at + 4) != 1 || read_le<uint16_t>(bytes, at + 6) != 16) return false;
  const uint64_t size = read_le<uint64_t>(bytes, at + 8);
  if (size > end - at - 16) return false;
  std::vector<Image> found;
  size_t p = at + 16;
  const size_t stop = at + 16 + size;
  while (p < stop) {
    if (stop - p < 32) return false;
    const uint16_t kind = read_le<uint16_t>(bytes, p);
    const uint32_t header = read_le<uint32_t>(bytes, p + 4);
    const uint64_t payload = read_le<uint64_t>(bytes, p + 8);
    if (header < 32 || header > stop - p || payload > stop - p - header) return false;
    if (kind == 1 || kind == 2) found.push_back({kind == 2, int(read_le<uint32_t>(bytes, p + 28))});
    p += header + payload;  // never past stop (checked above)
  }
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

// Every fat binary in bytes [begin, end).
std::vector<Image> images_in(const std::vector<unsigned char>& bytes, size_t begin, size_t end) {
  std::vector<Image> out;
  for (size_t at = begin; at + 16 <= end; ++at)
    if (bytes[at] == 0x50 && read_fatbin(bytes, at, end, out)) at += 15;  // 0x50: the magic's first byte
  return out;
}

void print(const std::string& name, const std::vector<Image>& images) {
  for (const Image& im : images)
    std::printf("%-40s %s  %s_%d\n", name.c_str(), im.elf ? "ELF" : "PTX", im.elf ? "sm" : "compute", im.arch);
}

// An ar archive: each member by name. Returns false if `bytes` is not one.
bool list_archive(const std::vector<unsigned char>& bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "!<arch>\n", 8) != 0) return false;
  std::string long_names;  // GNU: the "//" member
  size_t p = 8;
  while (p + 60 <= bytes.size()) {
    std::string name(reinterpret_cast<const char*>(&bytes[p]), 16);
    const size_t size = std::stoul(std::string(reinterpret_cast<const char*>(&bytes[p + 48]), 10));
    const size_t data = p + 60;
    if (size > bytes.size() - data) break;  // a truncated archive: stop at what is whole
    name = name.substr(0, name.find_last_not_of(' ') + 1);
    if (name == "//") {
      long_names.assign(reinterpret_cast<const char*>(&bytes[data]), size);
    } else if (name != "/" && name != "/SYM64/") {  // not the symbol table
      if (name.size() > 1 && name[0] == '/') {       // "/123": at offset 123 of the long names
        const size_t off = std::stoul(name.substr(1));
        name = off < long_names.size() ? long_names.substr(off, long_names.find('\n', off) - off) : name;
      }
      if (!name.empty() && name.back() == '/') name.pop_back();
      print(name, images_in(bytes, data, data + size));
    }
    p = data + size + (size % 2);  // members start at even offsets
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: fatbin_images FILE...   the GPU images (ELF sm_XX, PTX compute_XX) in object files or "
                 "static libraries\n");
    return argc < 2 ? 2 : 0;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fatbin_images: cannot open '%s'\n", argv[i]);
      return 2;
    }
    const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      if (!list_archive(bytes)) {  // an object file, or a linked program
        const std::string name = argv[i];
        const std::vector<Image> images = images_in(bytes, 0, bytes.size());
        if (images.empty()) std::fprintf(stderr, "fatbin_images: no GPU image in '%s'\n", argv[i]);
        print(name.substr(name.find_last_of('/') + 1), images);
      }
    } catch (const std::exception&) {  // std::stoul on a header that is not a number
      std::fprintf(stderr, "fatbin_images: '%s' starts like an ar archive but a member header is not readable\n", argv[i]);
      return 2;
    }
  }
  return 0;
}
