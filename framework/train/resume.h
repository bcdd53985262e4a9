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
// The training state is checked whole here too (TrainingState::from_json: counters that are
// integers >= 0, generator states), so a checkpoint that passes its CRC but holds, say, a
// step of "3" is one line and exit 2 like any other bad --resume, never an exception later.
//
// A flag names the data (--data FILE), and the file can change under the same name. A
// chapter that trains on a text also records a fingerprint of it (text_fingerprint() under
// train.extra.data) and compares it once the text is loaded (text_problem()): a checkpoint
// resumed on another text would be neither the old run nor a new one.
//
// Header-only, like cli.h: it works on the chapter's CLI::App.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "datasets/text.h"
#include "framework/io/checkpoint.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"

namespace hg::train {

namespace detail {

// A recorded value as a command-line word: "mlp", "0.05", "128".
inline std::string flag_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace detail

// The flags every training chapter records: the model, how far to train, the seed and the
// batches, the learning rate and momentum. A chapter adds its own (chapter 09: the scaler's).
inline nlohmann::json recorded_common_flags(const CommonFlags& f, const std::string& model, int epochs,
                                            nlohmann::json own = nlohmann::json::object()) {
  own.update({{"--model", model}, {"--epochs", epochs}, {"--seed", f.seed}, {"--batch-size", f.batch_size},
              {"--lr", f.lr}, {"--momentum", f.momentum}, {"--limit-train", f.limit_train}});
  return own;
}

// Settles the flags of a resumed run (see above). `lesson` is the chapter's run.json lesson
// ("02_fp32_training"); `given` holds the flags as parsed, in the form they are recorded.
// Returns "" (and the checkpoint's training state in `saved`), or the one line that says why
// the run cannot resume, for usage_error(). An empty `path` (no --resume) has nothing to
// settle: "".
inline std::string resume_flags(CLI::App& app, const std::string& path, const std::string& lesson,
                                const nlohmann::json& given, TrainingState& saved) {
  if (path.empty()) return "";  // not resuming: nothing to settle
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
  try {
    saved = TrainingState::from_json(train, where);
  } catch (const std::runtime_error& e) {
    return e.what();
  }

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

// The same, for a chapter that counts epochs: their number done in `epochs_done`.
inline std::string resume_flags(CLI::App& app, const std::string& path, const std::string& lesson,
                                const nlohmann::json& given, int64_t& epochs_done) {
  TrainingState saved;
  const std::string why = resume_flags(app, path, lesson, given, saved);
  if (why.empty() && !path.empty()) epochs_done = saved.epoch;
  return why;
}

// A checkpoint whose epochs are all done has nothing left to train: says so in one line and
// returns true (the program then exits 0 and prints no empty report).
inline bool all_epochs_done(const std::string& path, int64_t epochs_done, int64_t epochs) {
  if (epochs_done < epochs) return false;
  std::printf("%s: all %lld epoch(s) of this run are done; nothing to train (--epochs N with N > %lld "
              "trains further)\n", path.c_str(), (long long)epochs_done, (long long)epochs_done);
  return true;
}

// ---- the text a checkpoint was trained on ----------------------------------------------------

// What identifies a training text: its size, its vocabulary, and a 64-bit FNV-1a hash of
// every token of it in order (the vocabulary's code points, then the training and the
// validation ids), which one changed character changes. For train.extra.data:
//   {"source": "text file tiny.txt", "characters": 2190, "vocabulary": 18, "fnv1a64": "9f0c…"}
inline nlohmann::json text_fingerprint(const data::TextCorpus& corpus) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: xor each byte in, multiply by the prime
  auto add = [&h](uint32_t v) {
    for (int i = 0; i < 4; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001b3ull;
  };
  for (char32_t c : corpus.vocab) add(uint32_t(c));
  for (int32_t id : corpus.train) add(uint32_t(id));
  for (int32_t id : corpus.val) add(uint32_t(id));
  return {{"source", corpus.source}, {"characters", corpus.num_chars}, {"vocabulary", corpus.vocab_size()},
          {"fnv1a64", fmt::format("{:016x}", h)}};
}

// "" when `corpus` is the text the checkpoint at `path` was trained on (`saved`, its
// train.extra), else the one line why not, for usage_error().
inline std::string text_problem(const std::string& path, const TrainingState& saved, const data::TextCorpus& corpus) {
  const nlohmann::json now = text_fingerprint(corpus);
  const nlohmann::json was =
      saved.extra.is_object() && saved.extra.contains("data") ? saved.extra["data"] : nlohmann::json();
  if (!was.is_object() || !was.contains("fnv1a64"))
    return "--resume " + path + ": records no fingerprint of its training text (train.extra.data), so a changed "
           "text could not be told apart; start a new run";
  if (was["fnv1a64"] == now["fnv1a64"]) return "";
  auto describe = [](const nlohmann::json& f) {  // any JSON a file holds, without a type error
    auto field = [&f](const char* key) {
      return !f.contains(key) ? std::string("?") : f[key].is_string() ? f[key].get<std::string>() : f[key].dump();
    };
    return fmt::format("{} characters, vocabulary {}, FNV-1a {}", field("characters"), field("vocabulary"),
                       field("fnv1a64"));
  };
  return fmt::format("--resume {}: the checkpoint was trained on another text ({} now: {}; the checkpoint's: "
                     "{}): resume on the text it was trained on, or start a new run",
                     path, corpus.source, describe(now), describe(was));
}

}  // namespace hg::train
