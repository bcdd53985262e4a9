#include "framework/memory/report.h"

#include <fmt/format.h>

#include "cuda/runtime/memory.h"  // a build without CUDA: framework/cuda/no_cuda.cpp

namespace hg::memory {

std::string human_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

std::string memory_table(Device device) {
  const Usage u = usage(device);
  std::string out = fmt::format("memory on {}: peak {}\n", device_name(device), human_bytes(u.peak.total));
  out += fmt::format("{:<18}{:>12}{:>12}{:>12}\n", "category", "at peak", "own peak", "now");
  for (Tag t : kAllTags) {
    const int i = static_cast<int>(t);
    out += fmt::format("{:<18}{:>12}{:>12}{:>12}\n", tag_name(t), human_bytes(u.peak.by_tag[i]),
                       human_bytes(u.tag_peak[i]), human_bytes(u.current[i]));
  }
  // No total of the own peaks: they happen at different moments, so their sum was never held.
  out += fmt::format("{:<18}{:>12}{:>12}{:>12}\n", "total", human_bytes(u.peak.total), "-",
                     human_bytes(u.total()));
  // The allocator also holds what the table does not tag: kernels' scratch buffers
  // (DeviceTemp) and freed blocks it keeps for reuse.
  if (device == Device::CUDA && cuda::available())
    out += fmt::format("CUDA caching allocator: live {}, peak {}, cached {} (kernel scratch and "
                       "freed blocks included)\n",
                       human_bytes(int64_t(cuda::live_bytes())), human_bytes(int64_t(cuda::peak_bytes())),
                       human_bytes(int64_t(cuda::cached_bytes())));
  return out;
}

nlohmann::json memory_event_fields(Device device, const Snapshot& window, int64_t live) {
  nlohmann::json f = {{"device", device_name(device)}};
  for (Tag t : kAllTags) f[tag_name(t)] = window.by_tag[static_cast<int>(t)];
  f["peak"] = window.total;
  f["live"] = live;
  return f;
}

void log_memory(io::RunLog& log, int64_t step, Device device) {
  const Snapshot window = take_window(device);
  log.memory(step, memory_event_fields(device, window, usage(device).total()));
}

}  // namespace hg::memory
