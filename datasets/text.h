#pragma once
// A character-level text corpus for a small language model: the text as token ids, its
// vocabulary, a train/validation split, and random (B, T) windows to train on.
//
// Tokens are Unicode code points, not bytes. A byte vocabulary would split every non-ASCII
// character into two to four tokens that mean nothing alone, and a model sampling bytes can
// emit invalid UTF-8 (half a character). With code points every token is one character a
// reader sees, and every decoded sample is valid UTF-8. For plain ASCII, as the fortunes
// corpus almost is, the two are the same.
//
//   vocabulary   the sorted set of distinct code points in the whole text; token id = index
//   split        the first 90% of the tokens train, the last 10% validate (val_fraction):
//                deterministic, and no window of one split overlaps the other
//   batches      B windows of T + 1 consecutive tokens: inputs x = tokens[o, o+T),
//                targets y = tokens[o+1, o+T+1) (the next character at every position)
//
// Two sources, one validation:
//   the fortunes corpus   Debian's `fortunes` and `fortunes-min` packages: the 43 plain text
//                         files of /usr/share/games/fortunes/ listed by fortunes_files(), in
//                         that (alphabetical) order. Skipped: the *.dat files (binary indexes
//                         for the fortune program), the *.u8 entries (symbolic links to the
//                         same texts) and subfolders (other languages, off/). 2,576,684
//                         bytes, 2,576,637 characters, 113 distinct ones (Debian 12): nearly
//                         all ASCII, with a few accented letters, backspaces and bells.
//   --data FILE           any UTF-8 text file
// Both go through make_text_corpus, which refuses — naming the source — an empty text, a
// binary one (a NUL byte, or bytes that are not UTF-8, with the byte offset), and one too
// short for the context: each split must hold at least block_size + 1 characters.
// Errors are std::runtime_error.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::data {

inline constexpr const char* kDebianFortunesDir = "/usr/share/games/fortunes";

// The files of the fortunes corpus, in the order they are concatenated.
const std::vector<std::string>& fortunes_files();

// The concatenated text of fortunes_files() in `dir`. Each fortune ends with a line "%";
// a file whose last line is not one gets it, so the files join at a fortune boundary.
// A missing file is an error that names it and says which package to install.
std::string read_fortunes(const std::string& dir = kDebianFortunesDir);

// The bytes of a text file, unchecked (make_text_corpus checks them). Refuses a missing
// file, a folder or a FIFO (datasets/bytes.h), and one over 256 MiB.
std::string read_text_file(const std::string& path);

struct TextCorpus {
  std::string source;             // "fortunes corpus (/usr/share/games/fortunes)" or the file
  std::vector<char32_t> vocab;    // sorted distinct code points; id i is vocab[i]
  std::vector<int32_t> train;     // the first (1 − val_fraction) of the tokens
  std::vector<int32_t> val;       // the rest
  int64_t num_chars = 0;          // train.size() + val.size()

  int64_t vocab_size() const { return int64_t(vocab.size()); }
  // UTF-8 text -> ids. Throws naming the first character that is not in the vocabulary.
  std::vector<int32_t> encode(const std::string& utf8) const;
  // ids -> UTF-8 text. Throws on an id outside [0, vocab_size()).
  std::string decode(const std::vector<int32_t>& ids) const;
  // How often each token occurs in `tokens` (e.g. train), divided by their number: the
  // unigram distribution a model that ignores the context would learn.
  std::vector<double> frequencies(const std::vector<int32_t>& tokens) const;
};

// Checks, decodes and splits `text`; `source` names it in every error. A leading UTF-8 byte
// order mark (EF BB BF) is dropped. val_fraction in (0, 1).
TextCorpus make_text_corpus(const std::string& text, const std::string& source, int64_t block_size,
                            double val_fraction = 0.1);

// The corpus a command line asks for: `data_flag` empty -> the fortunes corpus in
// `fortunes_dir`, else the UTF-8 text file it names.
TextCorpus load_text_corpus(const std::string& data_flag, int64_t block_size, double val_fraction = 0.1,
                            const std::string& fortunes_dir = kDebianFortunesDir);

// B windows, each T inputs and the T next tokens. Row-major: x[b·T + t].
struct TokenBatch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> x, y;
  std::vector<int64_t> starts;  // (B) where each window starts in the split
};

// The batch of training step `step`: B window starts drawn uniformly from the
// tokens.size() − T possible ones, by a generator seeded with (seed, step) alone. So a run's
// data order is a function of its seed, and resuming at step s needs nothing but s. The
// validation loss draws its batches the same way from `val` with a seed of its own.
TokenBatch random_batch(const std::vector<int32_t>& tokens, int64_t B, int64_t T, uint64_t seed,
                        int64_t step);

}  // namespace hg::data
