// datasets/text.cpp — sections: 1. the fortunes corpus  2. reading a file  3. UTF-8
// 4. the corpus (checks, vocabulary, split)  5. encode / decode  6. random batches
#include "datasets/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "datasets/bytes.h"

namespace hg::data {

// ---- 1. The fortunes corpus --------------------------------------------------------------

const std::vector<std::string>& fortunes_files() {
  // Every plain text file that Debian 12's fortunes (1:1.99.1-7.3) and fortunes-min install
  // in /usr/share/games/fortunes/. A fixed list, not a directory scan: another fortunes-*
  // package adding a file there must not change the corpus (nor its vocabulary and loss).
  static const std::vector<std::string> files = {
      "art",       "ascii-art",   "computers",     "cookie",     "debian",   "definitions",
      "disclaimer", "drugs",      "education",     "ethnic",     "food",     "fortunes",
      "goedel",    "humorists",   "kids",          "knghtbrd",   "law",      "linux",
      "linuxcookie", "literature", "love",         "magic",      "medicine", "men-women",
      "miscellaneous", "news",    "paradoxum",     "people",     "perl",     "pets",
      "platitudes", "politics",   "pratchett",     "riddles",    "science",  "songs-poems",
      "sports",    "startrek",    "tao",           "translate-me", "wisdom", "work",
      "zippy"};
  return files;
}

std::string read_fortunes(const std::string& dir) {
  std::string text;
  for (const std::string& name : fortunes_files()) {
    const std::string path = dir + "/" + name;
    Bytes bytes;
    try {
      bytes = read_file(path, "fortunes file");
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("{} (the fortunes corpus needs Debian's fortunes package: "
                                           "./lab setup, or pass --data FILE with a text of your own)",
                                           e.what()));
    }
    text.append(bytes.begin(), bytes.end());
    // Fortunes are separated by a line holding "%". Five files end without one; add it so
    // the last fortune of one file and the first of the next stay two fortunes.
    if (!text.empty() && text.back() != '\n') text += '\n';
    if (text.size() < 3 || text.compare(text.size() - 3, 3, "\n%\n") != 0) text += "%\n";
  }
  return text;
}

// ---- 2. Reading a file -------------------------------------------------------------------

namespace {
constexpr uint64_t kMaxTextBytes = uint64_t(256) << 20;  // a corpus is read whole into memory
}

std::string read_text_file(const std::string& path) {
  FileReader f(path, "text file");
  if (f.size() > kMaxTextBytes)
    throw std::runtime_error(fmt::format("text file {} is {} bytes; the limit is {} (256 MiB): the "
                                         "corpus and its token ids are held in memory",
                                         path, f.size(), kMaxTextBytes));
  std::string text(size_t(f.size()), '\0');
  const size_t got = read_up_to(f, reinterpret_cast<uint8_t*>(text.data()), text.size());
  text.resize(got);  // a file that shrank while being read
  return text;
}

// ---- 3. UTF-8 ----------------------------------------------------------------------------
//
//   U+0000..U+007F     0xxxxxxx
//   U+0080..U+07FF     110xxxxx 10xxxxxx
//   U+0800..U+FFFF     1110xxxx 10xxxxxx 10xxxxxx       (not U+D800..U+DFFF: surrogates)
//   U+10000..U+10FFFF  11110xxx 10xxxxxx 10xxxxxx 10xxxxxx
// A decoder must refuse the longer form of a shorter code ("overlong": C0 80 for U+0000),
// or a NUL could hide in text that passed the NUL check.

namespace {

// Code points of `text`; throws naming `source` and the byte offset of the first problem.
std::vector<char32_t> decode_utf8(const std::string& text, const std::string& source) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto bad = [&](size_t at, const char* why) {
    return std::runtime_error(fmt::format("{} is not UTF-8 text (a binary file?): {} at byte offset {} "
                                          "(byte 0x{:02X})", source, why, at, s[at]));
  };
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    if (b == 0)
      throw std::runtime_error(fmt::format("{} is not text (a binary file?): a NUL byte at byte offset {}",
                                           source, i));
    int len;
    char32_t cp, min;
    if (b < 0x80) len = 1, cp = b, min = 0;
    else if ((b & 0xE0) == 0xC0) len = 2, cp = b & 0x1F, min = 0x80;
    else if ((b & 0xF0) == 0xE0) len = 3, cp = b & 0x0F, min = 0x800;
    else if ((b & 0xF8) == 0xF0) len = 4, cp = b & 0x07, min = 0x10000;
    else throw bad(i, "a byte that cannot start a character");
    if (i + len > n) throw bad(i, "a character cut off by the end of the text");
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) throw bad(i + k, "a missing continuation byte");
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min) throw bad(i, "an overlong encoding");
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) throw bad(i, "a code point that is not a character");
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// "'a'" for a printable ASCII character, "U+00E9" otherwise.
std::string describe_char(char32_t cp) {
  if (cp >= 0x20 && cp < 0x7F) return fmt::format("'{}'", char(cp));
  return fmt::format("U+{:04X}", uint32_t(cp));
}

}  // namespace

// ---- 4. The corpus ---------------------------------------------------------------------------

TextCorpus make_text_corpus(const std::string& text_in, const std::string& source, int64_t block_size,
                            double val_fraction) {
  if (block_size < 1) throw std::runtime_error(fmt::format("{}: block_size must be ≥ 1, got {}", source, block_size));
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw std::runtime_error(fmt::format("{}: the validation fraction must be in (0, 1), got {}", source, val_fraction));
  // A byte order mark is an encoding marker some editors write, not part of the text.
  const bool bom = text_in.size() >= 3 && text_in.compare(0, 3, "\xEF\xBB\xBF") == 0;
  const std::string text = bom ? text_in.substr(3) : text_in;
  if (text.empty()) throw std::runtime_error(fmt::format("{} is empty: there is no text to learn from", source));
  const std::vector<char32_t> chars = decode_utf8(text, source);

  TextCorpus c;
  c.source = source;
  c.num_chars = int64_t(chars.size());
  c.vocab = chars;
  std::sort(c.vocab.begin(), c.vocab.end());
  c.vocab.erase(std::unique(c.vocab.begin(), c.vocab.end()), c.vocab.end());

  // Each split must hold one window of block_size inputs plus the target after the last.
  const int64_t need = block_size + 1;
  auto val_size = [&](int64_t n) { return int64_t(double(n) * val_fraction); };
  auto fits = [&](int64_t n) { return val_size(n) >= need && n - val_size(n) >= need; };
  const int64_t n_val = val_size(c.num_chars), n_train = c.num_chars - n_val;
  if (!fits(c.num_chars)) {
    int64_t enough = int64_t(double(need) / std::min(val_fraction, 1 - val_fraction)) - 2;
    while (!fits(enough)) ++enough;  // the shortest text that fits (a step or two up)
    throw std::runtime_error(fmt::format(
        "{} is too short for block_size {}: {} characters split into {} for training and {} for "
        "validation (the last {:g}%), and each split needs at least block_size + 1 = {}; use a "
        "text of at least {} characters or a smaller block size",
        source, block_size, c.num_chars, n_train, n_val, 100 * val_fraction, need, enough));
  }

  std::vector<int32_t> ids(chars.size());
  for (size_t i = 0; i < chars.size(); ++i)
    ids[i] = int32_t(std::lower_bound(c.vocab.begin(), c.vocab.end(), chars[i]) - c.vocab.begin());
  c.train.assign(ids.begin(), ids.begin() + n_train);
  c.val.assign(ids.begin() + n_train, ids.end());
  return c;
}

TextCorpus load_text_corpus(const std::string& data_flag, int64_t block_size, double val_fraction,
                            const std::string& fortunes_dir) {
  if (data_flag.empty())
    return make_text_corpus(read_fortunes(fortunes_dir), fmt::format("the fortunes corpus ({})", fortunes_dir),
                            block_size, val_fraction);
  return make_text_corpus(read_text_file(data_flag), fmt::format("text file {}", data_flag), block_size,
                          val_fraction);
}

// ---- 5. Encode / decode ----------------------------------------------------------------------

std::vector<int32_t> TextCorpus::encode(const std::string& utf8) const {
  std::vector<int32_t> ids;
  for (char32_t cp : decode_utf8(utf8, "the text to encode")) {
    auto it = std::lower_bound(vocab.begin(), vocab.end(), cp);
    if (it == vocab.end() || *it != cp)
      throw std::runtime_error(fmt::format("encode: the character {} is not in the vocabulary of {} ({} characters)",
                                           describe_char(cp), source, vocab.size()));
    ids.push_back(int32_t(it - vocab.begin()));
  }
  return ids;
}

std::string TextCorpus::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw std::runtime_error(fmt::format("decode: token id {} is outside the vocabulary [0, {})", id, vocab.size()));
    append_utf8(out, vocab[id]);
  }
  return out;
}

std::vector<double> TextCorpus::frequencies(const std::vector<int32_t>& tokens) const {
  std::vector<double> f(vocab.size(), 0.0);
  for (int32_t id : tokens) f.at(size_t(id)) += 1.0;
  for (double& v : f) v /= double(std::max<size_t>(1, tokens.size()));
  return f;
}

// ---- 6. Random batches -------------------------------------------------------------------------

namespace {
// SplitMix64 (Steele, Lea, Flood 2014), as hg::Generator: fixed, tiny, well mixed.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};
}  // namespace

TokenBatch random_batch(const std::vector<int32_t>& tokens, int64_t B, int64_t T, uint64_t seed, int64_t step) {
  if (B < 1 || T < 1) throw std::runtime_error(fmt::format("random_batch: B and T must be ≥ 1, got B={} T={}", B, T));
  if (int64_t(tokens.size()) < T + 1)
    throw std::runtime_error(fmt::format("random_batch: {} tokens cannot hold a window of T + 1 = {}", tokens.size(), T + 1));
  // One stream per (seed, step): hash the pair, as the image DataLoader does per epoch.
  SplitMix64 mix{seed};
  SplitMix64 gen{mix.next() ^ (uint64_t(step) * 0xD1B54A32D192ED03ull)};
  const uint64_t starts = tokens.size() - uint64_t(T);  // windows [o, o + T] with o + T < size
  TokenBatch b;
  b.B = B;
  b.T = T;
  b.x.resize(size_t(B * T));
  b.y.resize(size_t(B * T));
  for (int64_t i = 0; i < B; ++i) {
    // next() % starts: the bias towards small offsets is below starts / 2^64, nothing here
    const int64_t o = int64_t(gen.next() % starts);
    b.starts.push_back(o);
    std::copy_n(tokens.begin() + o, T, b.x.begin() + i * T);
    std::copy_n(tokens.begin() + o + 1, T, b.y.begin() + i * T);
  }
  return b;
}

}  // namespace hg::data
