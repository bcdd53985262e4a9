// The character-level text corpus (datasets/text.h): vocabulary, encode/decode, the
// train/validation split, random windows, the fortunes corpus, and one clear error for each
// kind of bad file, naming the file.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "datasets/text.h"

using hg::data::TextCorpus;

namespace {

// A file under the build's temporary folder with `bytes`; removed by the destructor.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name, const std::string& bytes)
      : path("/tmp/hg_test_text_" + std::to_string(::getpid()) + "_" + name) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define CHECK_ERROR(expr, text)                                                \
  do {                                                                         \
    const std::string msg_ = error_of([&] { (void)(expr); });                  \
    CHECK_MESSAGE(msg_.find(text) != std::string::npos, "got: \"" << msg_ << "\""); \
  } while (0)

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("vocabulary: the sorted distinct characters, encode and decode are inverse") {
  const std::string text = repeat("hello, world\n", 20);
  TextCorpus c = hg::data::make_text_corpus(text, "test text", 8);
  CHECK(c.vocab == std::vector<char32_t>{'\n', ' ', ',', 'd', 'e', 'h', 'l', 'o', 'r', 'w'});
  CHECK(c.vocab_size() == 10);
  CHECK(c.encode("hello") == std::vector<int32_t>{5, 4, 6, 6, 7});
  CHECK(c.decode(c.encode("world, hello\n")) == "world, hello\n");
  // all the tokens, train then validation, decode back to the text
  std::vector<int32_t> all = c.train;
  all.insert(all.end(), c.val.begin(), c.val.end());
  CHECK(c.decode(all) == text);
}

TEST_CASE("tokens are code points: a multi-byte character is one token, and decodes to valid UTF-8") {
  const std::string text = repeat("caf\xC3\xA9 \xE2\x82\xAC 5 \xF0\x9F\x98\x80\n", 10);  // café € 5 😀
  TextCorpus c = hg::data::make_text_corpus(text, "test text", 4);
  CHECK(c.num_chars == 10 * 11);
  CHECK(c.vocab == std::vector<char32_t>{'\n', ' ', '5', 'a', 'c', 'f', 0xE9, 0x20AC, 0x1F600});
  CHECK(c.encode("\xC3\xA9").size() == 1);
  CHECK(c.decode({6, 7, 8}) == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  // a byte order mark at the start is an encoding marker, not text
  TextCorpus bom = hg::data::make_text_corpus("\xEF\xBB\xBF" + text, "test text", 4);
  CHECK(bom.vocab == c.vocab);
  CHECK(bom.num_chars == c.num_chars);
}

TEST_CASE("encode and decode name what they cannot map") {
  TextCorpus c = hg::data::make_text_corpus(repeat("abc\n", 30), "test text", 4);
  CHECK_ERROR(c.encode("abz"), "encode: the character 'z' is not in the vocabulary of test text (4 characters)");
  CHECK_ERROR(c.encode("a\xC3\xA9"), "encode: the character U+00E9 is not in the vocabulary");
  CHECK_ERROR(c.decode({0, 4}), "decode: token id 4 is outside the vocabulary [0, 4)");
  CHECK_ERROR(c.decode({-1}), "decode: token id -1");
}

TEST_CASE("the split: the first 90% train, the last 10% validate, in order") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += char('a' + i % 26);
  TextCorpus c = hg::data::make_text_corpus(text, "test text", 16);
  CHECK(c.train.size() == 900);
  CHECK(c.val.size() == 100);
  CHECK(c.decode(c.train) == text.substr(0, 900));
  CHECK(c.decode(c.val) == text.substr(900));
  TextCorpus quarter = hg::data::make_text_corpus(text, "test text", 16, 0.25);
  CHECK(quarter.val.size() == 250);
  // the same text always splits the same way
  CHECK(hg::data::make_text_corpus(text, "again", 16).val == c.val);
}

TEST_CASE("random windows: y is x shifted by one, inside the split, a function of (seed, step)") {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += char('a' + (i * 7) % 26);
  TextCorpus c = hg::data::make_text_corpus(text, "test text", 32);
  const int64_t B = 8, T = 32;
  hg::data::TokenBatch b = hg::data::random_batch(c.train, B, T, /*seed=*/7, /*step=*/3);
  REQUIRE(b.x.size() == size_t(B * T));
  REQUIRE(b.y.size() == size_t(B * T));
  REQUIRE(b.starts.size() == size_t(B));
  for (int64_t i = 0; i < B; ++i) {
    const int64_t o = b.starts[i];
    CHECK(o >= 0);
    CHECK(o + T < int64_t(c.train.size()));  // the last target is inside the split
    for (int64_t t = 0; t < T; ++t) {
      CHECK(b.x[i * T + t] == c.train[o + t]);
      CHECK(b.y[i * T + t] == c.train[o + t + 1]);
    }
  }
  // the same (seed, step) gives the same batch; another step or seed another one
  CHECK(hg::data::random_batch(c.train, B, T, 7, 3).starts == b.starts);
  CHECK(hg::data::random_batch(c.train, B, T, 7, 4).starts != b.starts);
  CHECK(hg::data::random_batch(c.train, B, T, 8, 3).starts != b.starts);
  // over many steps the starts cover the split evenly: every tenth of it gets 10% ± 2%
  std::vector<int> tenths(10, 0);
  const int64_t possible = int64_t(c.train.size()) - T;
  for (int64_t step = 0; step < 1000; ++step)
    for (int64_t o : hg::data::random_batch(c.train, B, T, 1, step).starts) ++tenths[o * 10 / possible];
  for (int n : tenths) CHECK(std::abs(n - 800) < 160);
  CHECK_ERROR(hg::data::random_batch(c.val, 1, 500, 0, 0), "random_batch: 500 tokens cannot hold a window of T + 1 = 501");
}

TEST_CASE("frequencies: the unigram distribution of a split") {
  TextCorpus c = hg::data::make_text_corpus(repeat("aab\n", 30), "test text", 4);
  std::vector<double> f = c.frequencies(c.encode("aab\n"));
  CHECK(f == std::vector<double>{0.25, 0.5, 0.25});
}

// ---- bad files: one error each, naming the file --------------------------------------------

TEST_CASE("a missing file, a folder, an empty file are refused, naming the file") {
  CHECK_ERROR(hg::data::load_text_corpus("/nonexistent/corpus.txt", 8),
              "cannot open text file /nonexistent/corpus.txt: No such file or directory");
  CHECK_ERROR(hg::data::load_text_corpus("/tmp", 8), "text file /tmp is a folder, not a file");
  TempFile empty("empty.txt", "");
  CHECK_ERROR(hg::data::load_text_corpus(empty.path, 8), "text file " + empty.path + " is empty");
  TempFile only_bom("bom.txt", "\xEF\xBB\xBF");
  CHECK_ERROR(hg::data::load_text_corpus(only_bom.path, 8), "text file " + only_bom.path + " is empty");
}

TEST_CASE("a binary file is refused: a NUL byte, or bytes that are not UTF-8, with the offset") {
  const std::string text = repeat("plain text\n", 20);  // 220 bytes
  struct Bad {
    std::string bytes, message;
  };
  const std::vector<Bad> bad = {
      {text + std::string("\0", 1) + text, "is not text (a binary file?): a NUL byte at byte offset 220"},
      {text + "\xFF" + text, "is not UTF-8 text (a binary file?): a byte that cannot start a character at byte offset 220 (byte 0xFF)"},
      {text + "\x80" + text, "a byte that cannot start a character at byte offset 220 (byte 0x80)"},
      {text + "\xC3" + "(" + text, "a missing continuation byte at byte offset 221"},
      {text + "\xE2\x82", "a character cut off by the end of the text at byte offset 220"},
      {text + "\xC0\x80" + text, "an overlong encoding at byte offset 220"},      // a hidden NUL
      {text + "\xED\xA0\x80" + text, "a code point that is not a character at byte offset 220"},  // U+D800
      {text + "\xF4\x90\x80\x80" + text, "a code point that is not a character at byte offset 220"},  // > U+10FFFF
  };
  for (const Bad& b : bad) {
    TempFile f("bad.txt", b.bytes);
    const std::string msg = error_of([&] { hg::data::load_text_corpus(f.path, 8); });
    CHECK_MESSAGE(msg.find("text file " + f.path + " ") == 0, msg);
    CHECK_MESSAGE(msg.find(b.message) != std::string::npos, "got: " << msg << "\nwanted: " << b.message);
  }
  // the first 64 KiB of a real binary (this test program) is refused too
  std::ifstream self("/proc/self/exe", std::ios::binary);
  std::string elf(65536, '\0');
  self.read(elf.data(), elf.size());
  TempFile f("elf.bin", elf);
  CHECK_ERROR(hg::data::load_text_corpus(f.path, 8), "(a binary file?)");
}

TEST_CASE("random bytes: whatever the decoder accepts re-encodes to exactly the same bytes") {
  // An accepted overlong form, surrogate or stray byte would come back as different bytes.
  // The bytes are drawn from the interesting ranges: ASCII, continuation bytes, lead bytes
  // of every length, and the bytes that can never appear (C0, C1, F5..FF).
  const std::vector<uint8_t> pool = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p',
                                     'q', 'r', '\n', 0x7F, 0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                     0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  uint64_t state = 12345;
  int accepted = 0, multibyte = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s = "ab";  // room for a 1-character window in each split (block_size 1)
    auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    const int len = 1 + int(next() % 8);
    for (int i = 0; i < len; ++i) {
      if (trial % 2 == 0) {  // any byte of the pool
        s += char(pool[next() % pool.size()]);
      } else {               // a lead byte and 0-3 continuation-like bytes: near-valid sequences
        static const uint8_t lead[] = {0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5};
        static const uint8_t cont[] = {0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 'a'};
        s += char(lead[next() % 10]);
        for (int k = int(next() % 4); k > 0; --k) s += char(cont[next() % 7]);
      }
    }
    s += "cd";
    TextCorpus c;
    try {
      c = hg::data::make_text_corpus(s, "random", 1, 0.5);
    } catch (const std::runtime_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find("random is not UTF-8 text") == 0, e.what());
      continue;
    }
    ++accepted;
    multibyte += c.vocab.back() >= 0x80;
    std::vector<int32_t> all = c.train;
    all.insert(all.end(), c.val.begin(), c.val.end());
    REQUIRE_MESSAGE(c.decode(all) == s, "trial " << trial);
  }
  MESSAGE(accepted << " of 20000 random strings were valid UTF-8, " << multibyte << " with multi-byte characters");
  CHECK(accepted > 1000);
  CHECK(multibyte > 150);
}

TEST_CASE("a text too short for the context is refused, for either split, naming the sizes") {
  // 100 characters: 90 train, 10 validation; block_size 9 needs 10 per split
  TempFile f("short.txt", repeat("0123456789", 10));
  CHECK(hg::data::load_text_corpus(f.path, 9).val.size() == 10);
  CHECK_ERROR(hg::data::load_text_corpus(f.path, 10),
              "text file " + f.path + " is too short for block_size 10: 100 characters split into 90 for "
              "training and 10 for validation (the last 10%), and each split needs at least block_size + 1 = 11; "
              "use a text of at least 110 characters or a smaller block size");
  TempFile enough("enough.txt", repeat("0123456789", 11));  // the 110 the message asks for fit
  CHECK(hg::data::load_text_corpus(enough.path, 10).val.size() == 11);
  // a large validation fraction starves the training split instead
  CHECK_ERROR(hg::data::load_text_corpus(f.path, 20, 0.8), "split into 20 for training and 80 for validation");
  CHECK_ERROR(hg::data::make_text_corpus("abc", "x", 0), "x: block_size must be ≥ 1, got 0");
  CHECK_ERROR(hg::data::make_text_corpus("abc", "x", 1, 1.0), "x: the validation fraction must be in (0, 1), got 1");
}

// ---- the fortunes corpus ----------------------------------------------------------------------

TEST_CASE("fortunes: a missing file names itself and the package") {
  CHECK_ERROR(hg::data::read_fortunes("/nonexistent"),
              "cannot open fortunes file /nonexistent/art: No such file or directory (the fortunes corpus "
              "needs Debian's fortunes package: ./lab setup, or pass --data FILE");
  CHECK(hg::data::fortunes_files().size() == 43);
  CHECK(std::set<std::string>(hg::data::fortunes_files().begin(), hg::data::fortunes_files().end()).size() == 43);
}

TEST_CASE("fortunes: the real corpus (when installed) has the documented size and vocabulary") {
  struct stat st;
  if (::stat((std::string(hg::data::kDebianFortunesDir) + "/fortunes").c_str(), &st) != 0) {
    MESSAGE("the fortunes package is not installed in " << hg::data::kDebianFortunesDir << "; skipped");
    return;
  }
  const std::string text = hg::data::read_fortunes();
  TextCorpus c = hg::data::make_text_corpus(text, "fortunes", 128);
  MESSAGE("fortunes: " << text.size() << " bytes, " << c.num_chars << " characters, vocabulary " << c.vocab_size()
                       << ", train " << c.train.size() << ", validation " << c.val.size());
  // the numbers datasets/text.h states (Debian 12, fortunes 1:1.99.1-7.3)
  CHECK(text.size() == 2576684);
  CHECK(c.num_chars == 2576637);
  CHECK(c.vocab_size() == 113);
  CHECK(c.val.size() == 257663);
  // every file joins the next at a fortune boundary: no "%" line is missing
  CHECK(text.compare(text.size() - 3, 3, "\n%\n") == 0);
  CHECK(text.find("Wesley T. Williams\n%\n") != std::string::npos);
}
