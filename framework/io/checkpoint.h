#pragma once
// Checkpoints: one versioned binary file holding named arrays plus JSON metadata.
//
// File layout (every integer little-endian; offsets in bytes):
//
//   0      6   magic "HGCKPT"
//   6      2   u16 format version (kCheckpointVersion)
//   8      8   u64 total file size, CRC included (a truncated file is caught right here)
//   16     8   u64 M, the metadata length
//   24     M   metadata: UTF-8 JSON (step, epoch, args, RNG states, ... whatever the writer keeps)
//   24+M   4   u32 E, the number of entries; then E entries, each:
//                u16 name length, name bytes          e.g. "model.fc1.weight"
//                u8  dtype length, dtype bytes        "f32" "f16" "bf16" "f64" "i64" "i32" "u8"
//                u8  ndim, ndim × i64 dims            e.g. 2, (256, 784)
//                u64 nbytes, nbytes of raw data       row-major, little-endian elements
//   end-4  4   u32 CRC-32 (zlib's) of every byte before it
//
// Reading checks, in this order: magic, version, total size, CRC, then every length against
// the bytes left. Any failure throws std::runtime_error naming the file, the byte offset and
// the reason. load_checkpoint() reads the first 16 bytes alone and holds the first three
// checks against the file's size before it reads the rest, so a file of gigabytes that is
// not a checkpoint costs 16 bytes, not its size in memory.
//
// Writing is atomic (framework/io/atomic_file.h): a failed save leaves the previous
// checkpoint file exactly as it was. A save replaces only a checkpoint: a file already at
// the path that does not start with the magic (the training text, a run log, anything) is
// refused and left as it is.
//
// This file knows nothing of models or optimizers: it stores buffers. framework/nn glues
// a model's parameters, an optimizer's state and the RNG states into a Checkpoint.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hg::io {

inline constexpr char kCheckpointMagic[6] = {'H', 'G', 'C', 'K', 'P', 'T'};
inline constexpr uint16_t kCheckpointVersion = 1;

// Bytes per element of a dtype string; 0 when the string is not one of the known dtypes.
size_t checkpoint_dtype_size(std::string_view dtype);

struct CheckpointEntry {
  std::string name;
  std::string dtype;            // "f32", "f16", "bf16", "f64", "i64", "i32", "u8"
  std::vector<int64_t> shape;   // () for a scalar
  std::vector<uint8_t> bytes;   // numel · dtype size bytes

  int64_t numel() const;
};

// The first element of a floating-point entry that is NaN or ±inf, read from the bits of its
// dtype (f64 f32 f16 bf16: every exponent bit set); integer entries have none.
struct NonFinite {
  int64_t index = -1;  // -1: every element is finite
  const char* what = "";  // "NaN", "inf" or "-inf"
};
NonFinite find_non_finite(const CheckpointEntry& entry);

class Checkpoint {
 public:
  nlohmann::json meta = nlohmann::json::object();  // free-form; kept as written

  // Adds a copy of `nbytes` bytes. Throws when the name is taken or empty, the dtype unknown,
  // or nbytes ≠ numel(shape) · size(dtype).
  void add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
           const void* data, size_t nbytes);

  bool has(std::string_view name) const;
  // Throws "<file>: checkpoint has no entry 'x' (it has N entries: a, b, ...)".
  const CheckpointEntry& at(std::string_view name) const;
  const std::vector<CheckpointEntry>& entries() const { return entries_; }

  // Copies entry `name` into `dst` after checking it has exactly this dtype and shape
  // (so restoring into a model of another size fails with both shapes in the message).
  void copy_to(std::string_view name, std::string_view dtype, const std::vector<int64_t>& shape,
               void* dst, size_t nbytes) const;

  std::string source;  // the file this was read from ("" for one built in memory)

 private:
  std::vector<CheckpointEntry> entries_;     // in insertion order (the order in the file)
  std::map<std::string, size_t, std::less<>> index_;
};

// The file bytes of a checkpoint, and back. `name` labels errors (usually the path).
std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt);
Checkpoint decode_checkpoint(const uint8_t* data, size_t size, const std::string& name);

void save_checkpoint(const std::string& path, const Checkpoint& ckpt);  // atomic
Checkpoint load_checkpoint(const std::string& path);

// "" when a save may write `path`: nothing is there, an empty file (nothing to lose), or a
// file that starts with the magic (a checkpoint, whole or damaged, that the next one
// replaces). Otherwise why not, starting with the path. save_checkpoint() refuses with it,
// and --checkpoint checks it before any work (framework/train/cli.h).
std::string checkpoint_target_problem(const std::string& path);

std::string shape_string(const std::vector<int64_t>& shape);  // "(256, 784)"

}  // namespace hg::io
