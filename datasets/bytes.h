#pragma once
// Reading a whole file into memory, and gunzip through zlib.
//
// Every reader in datasets/ first gets the file's bytes, then parses them with bounds checks.
// Errors are std::runtime_error whose message names the file and, for bad contents, the
// byte offset where the problem was found.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::data {

using Bytes = std::vector<uint8_t>;

// The whole file; throws "cannot open <path>: <reason>" when it cannot be read.
Bytes read_file(const std::string& path);

// True when the data starts with the gzip magic bytes 1f 8b.
bool is_gzip(const uint8_t* data, size_t size);

// Inflates a gzip stream. `name` is used in messages: a bad or truncated stream throws
// "<name>: bad gzip data at compressed byte offset N: <zlib's reason>" or
// "<name>: gzip data ends early at compressed byte offset N (file truncated?)".
// Several gzip members one after another (`cat a.gz b.gz`) inflate to their concatenation;
// other bytes after the end of the data are an error.
// Refuses to produce more than `max_output` bytes (a corrupt header cannot exhaust memory).
Bytes gunzip(const uint8_t* data, size_t size, const std::string& name,
             size_t max_output = size_t(1) << 32);

// read_file, then gunzip when the bytes start with the gzip magic (the name does not matter).
Bytes read_file_maybe_gzip(const std::string& path);

}  // namespace hg::data
