#pragma once
// framework/memory/report.h — the accountant's numbers, for people and for the run log.
//
//   hg::memory::reset_peak();                       // before the loop (after building the model)
//   for (...) {
//     ... one training step ...
//     hg::memory::log_memory(log, step, device);    // a "memory" event: this step's peak
//   }
//   std::printf("%s", hg::memory::memory_table(device).c_str());   // at the end of the run
//
// The table (sizes in KiB/MiB/GiB, 1024-based):
//
//   memory on cpu: peak 1.23 MiB
//   category             at peak     own peak          now
//   parameters         397.0 KiB    397.0 KiB    397.0 KiB
//   ...
//   total                1.23 MiB            -    794.1 KiB
//
// "at peak" is what each category held at the moment the total was largest; "own peak" is
// the most that category ever held (categories peak at different moments: activations at
// the end of the forward pass, gradients at the end of the backward pass).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/io/run_log.h"
#include "framework/memory/accountant.h"

namespace hg::memory {

// "512 B", "1.50 KiB", "397.0 KiB", "1.23 MiB", "2.00 GiB".
std::string human_bytes(int64_t bytes);

std::string memory_table(Device device);

// The fields of a memory event: the window's peak broken down by tag, and what is live now.
nlohmann::json memory_event_fields(Device device, const Snapshot& window, int64_t live);

// Writes the memory event of `device` for `step` (the peak since the previous event) and
// starts a new window.
void log_memory(io::RunLog& log, int64_t step, Device device);

}  // namespace hg::memory
