#pragma once
// Resuming a run: the flags a checkpoint decides, settled before any work.
//
// A checkpoint records the chapter that wrote it and the flags that decide which batches
// the run sees and what each step does (--model, --seed, --batch-size, --lr, --limit-train,
// and a chapter's own such as --growth-interval), under train.extra:
//
//   saving:    state.extra["lesson"] = "02_fp32_training";
//              state.extra["flags"] = run_flags;   // {"--model": "mlp", "--lr": 0.05, ...}
//
// `--resume FILE` reads them back right after the command line is parsed and goes flag by flag:
//   - left out on the command line: the checkpoint's value is used (through CLI11, so the
//     flag's own checks run on it), and the run continues exactly as it was going;
//   - given with the checkpoint's value: nothing to do;
//   - given with another value: refused, exit 2, naming the flag and the checkpoint's value.
//     Taking it silently would make a run that is neither the old one nor a new one (a new
//     seed reshuffles from the middle; a new --lr is overwritten by the checkpoint's
//     optimizer state), and run.json would record a value that was never used.
// --epochs is the exception: it says how far to train, so a resumed run may go further than
// first planned. A checkpoint whose epochs are all done (its train.epoch >= --epochs) has
// nothing left to train: the chapter says so and exits 0.
//
// Header-only, like cli.h: it works on the chapter's CLI::App.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <string>

#include "framework/io/checkpoint.h"

namespace hg::train {

namespace detail {

// A recorded value as a command-line word: "mlp", "0.05", "128".
inline std::string flag_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace detail

// Settles the flags of a resumed run (see above). `lesson` is the chapter's run.json lesson
// ("02_fp32_training"); `given` holds the flags as parsed, in the form they are recorded.
// Returns "" (and the number of epochs the checkpoint has done in `epochs_done`), or the one
// line that says why the run cannot resume, for usage_error().
inline std::string resume_flags(CLI::App& app, const std::string& path, const std::string& lesson,
                                const nlohmann::json& given, int64_t& epochs_done) {
  nlohmann::json meta;
  try {
    meta = hg::io::load_checkpoint(path).meta;  // checks the whole file: version, sizes, CRC
  } catch (const std::exception& e) {
    return std::string("--resume: ") + e.what();
  }
  const std::string where = "--resume " + path;
  const nlohmann::json train = meta.contains("train") ? meta["train"] : nlohmann::json();
  const nlohmann::json extra = train.is_object() && train.contains("extra") ? train["extra"] : nlohmann::json();
  if (!extra.is_object() || !extra.contains("flags") || !extra["flags"].is_object() ||
      !extra.contains("lesson") || !extra["lesson"].is_string())
    return where + ": records no training flags (train.extra.flags); resume only from a checkpoint "
                   "this chapter's --checkpoint wrote";
  if (extra["lesson"] != lesson)
    return where + ": a checkpoint of " + extra["lesson"].get<std::string>() + ", not of " + lesson;
  if (!train.contains("epoch") || !train["epoch"].is_number_integer() || train["epoch"].get<int64_t>() < 0)
    return where + ": train.epoch is missing or negative";
  epochs_done = train["epoch"].get<int64_t>();

  for (const auto& [name, saved] : extra["flags"].items()) {
    CLI::Option* opt = app.get_option_no_throw(name);
    if (!opt) continue;  // a flag this program does not have cannot differ
    const bool on_command_line = opt->count() > 0;
    if (on_command_line && name == "--epochs") continue;  // how far to train: the command line's
    if (on_command_line) {
      if (given.contains(name) && given[name] != saved)
        return where + ": the checkpoint was trained with " + name + " " + detail::flag_text(saved) + ", not " +
               detail::flag_text(given[name]) + " (leave " + name + " out to continue with its value)";
      continue;
    }
    try {
      opt->clear();
      opt->add_result(detail::flag_text(saved));
      opt->run_callback();  // the flag's checks, then its variable
    } catch (const CLI::ParseError& e) {
      return where + ": its " + name + " " + detail::flag_text(saved) + " is refused: " + e.what();
    }
  }
  return "";
}

}  // namespace hg::train
