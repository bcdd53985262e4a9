#!/usr/bin/env python3
"""Writes the seed corpus of crafted files for the fuzz targets (tests/fuzz/corpus/).

    python3 tests/fuzz/make_corpus.py

ok_*  files a reader must accept; bad_* files it must refuse with a message naming the file
(tests/fuzz/replay_main.cpp checks both). The checkpoint files are written by this script's
own implementation of the format in framework/io/checkpoint.h, so the replay also checks
that the C++ reader accepts files it did not write itself. Deterministic: rerunning gives
the same bytes.
"""
import gzip
import io
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:  # mtime 0: reproducible
        f.write(data)
    return buf.getvalue()


# ---- IDX: 00 00 type ndim, big-endian u32 dims, big-endian elements -----------------------
def idx(type_code, dims, payload):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


pixels = bytes((i * 7 + 3) % 256 for i in range(5 * 4 * 3))
good = idx(0x08, [5, 4, 3], pixels)
put("idx", "ok_u8_5x4x3", good)
put("idx", "ok_u8_5x4x3.gz", gz(good))
put("idx", "ok_labels", idx(0x08, [10], bytes(range(10))))
put("idx", "ok_i16", idx(0x0B, [3], struct.pack(">3h", 1, -2, 300)))
put("idx", "ok_i32", idx(0x0C, [2], struct.pack(">2i", 7, -70000)))
put("idx", "ok_f32", idx(0x0D, [2, 2], struct.pack(">4f", 0.5, -1.0, 2.25, 3.0)))
put("idx", "ok_f64", idx(0x0E, [1], struct.pack(">d", 2.5)))
put("idx", "ok_empty_0x28x28", idx(0x08, [0, 28, 28], b""))

put("idx", "bad_empty", b"")
put("idx", "bad_two_bytes", b"\x00\x00")
put("idx", "bad_magic", b"\x01" + good[1:])
put("idx", "bad_type_0x07", good[:2] + b"\x07" + good[3:])
put("idx", "bad_zero_dims", b"\x00\x00\x08\x00")
put("idx", "bad_header_cut", good[:9])
put("idx", "bad_short_data", good[:-1])
put("idx", "bad_trailing_bytes", good + b"\x00\x00")
put("idx", "bad_huge_dims", idx(0x0E, [0xFFFFFFFF] * 4, b"\x00" * 16))
put("idx", "bad_dims_wrap_to_zero", idx(0x08, [0x10000] * 4, b""))
put("idx", "bad_255_dims", bytes([0, 0, 8, 255]) + b"\x00\x00\x00\x01" * 10)
put("idx", "bad_truncated.gz", gz(good)[: len(gz(good)) // 2])
bad_crc = bytearray(gz(good))
bad_crc[-8] ^= 0x55
put("idx", "bad_gzip_crc.gz", bytes(bad_crc))
put("idx", "bad_gzip_garbage.gz", b"\x1f\x8b" + bytes((i * 37) % 251 for i in range(64)))
put("idx", "bad_short_data_inside.gz", gz(good[:-5]))
# 1 MiB of zeros declared as 1 KiB: a valid gzip stream whose IDX has trailing data.
put("idx", "bad_gzip_bomb_like.gz", gz(idx(0x08, [1024], b"\x00" * (1 << 20))))
# The header limits of datasets/idx.h: 2^24 items, 2^24 elements an item, 1 GiB in all.
put("idx", "bad_limit_items", idx(0x08, [(1 << 24) + 1], b""))
put("idx", "bad_limit_item_elements", idx(0x08, [1, 4097, 4096], b""))
put("idx", "bad_limit_bytes", idx(0x0E, [1 << 24, 9], b""))
put("idx", "bad_empty_but_huge_dims", idx(0x08, [0xFFFFFFFF] * 3 + [0], b""))
# 1 GiB claimed by a gzip of a few hundred bytes: more than deflate can expand to (1032:1).
put("idx", "bad_gzip_impossible_claim.gz", gz(idx(0x08, [1 << 14, 256, 256], pixels)))


# ---- checkpoints (framework/io/checkpoint.h) ----------------------------------------------
SIZES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "u8": 1}


def entry(name, dtype, shape, data, nbytes=None):
    n = len(data) if nbytes is None else nbytes
    return (struct.pack("<H", len(name)) + name.encode() + bytes([len(dtype)]) + dtype.encode()
            + bytes([len(shape)]) + b"".join(struct.pack("<q", d) for d in shape)
            + struct.pack("<Q", n) + data)


def ckpt(meta_bytes, entries, count=None, version=1, extra=b"", size_delta=0):
    body = meta_bytes + struct.pack("<I", len(entries) if count is None else count) + b"".join(entries) + extra
    head_len = 6 + 2 + 8 + 8
    total = head_len + len(body) + 4 + size_delta
    data = b"HGCKPT" + struct.pack("<H", version) + struct.pack("<Q", total) + struct.pack("<Q", len(meta_bytes)) + body
    return data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)


meta = json.dumps({"step": 1234, "epoch": 3, "rng": {"state": 18364758544493064720}}).encode()
weights = struct.pack("<6f", -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
entries = [entry("model.fc1.weight", "f32", [2, 3], weights),
           entry("optim.lr", "f64", [], struct.pack("<d", 0.05)),
           entry("model.h", "f16", [3], struct.pack("<3H", 0x3C00, 0x7BFF, 0x0001)),
           entry("loader.state", "i64", [2], struct.pack("<2q", -1, 1 << 40)),
           entry("empty", "f32", [0, 5], b"")]
sample = ckpt(meta, entries)
put("checkpoint", "ok_sample.hgc", sample)
put("checkpoint", "ok_no_entries.hgc", ckpt(b"{}", []))

put("checkpoint", "bad_empty.hgc", b"")
put("checkpoint", "bad_magic.hgc", b"HGCKPX" + sample[6:])
put("checkpoint", "bad_version_2.hgc", ckpt(meta, entries, version=2))
put("checkpoint", "bad_truncated.hgc", sample[: len(sample) // 2])
put("checkpoint", "bad_cut_crc.hgc", sample[:-2])
put("checkpoint", "bad_trailing.hgc", sample + b"\x00")
flipped = bytearray(sample)
flipped[len(sample) - 20] ^= 0x10
put("checkpoint", "bad_flipped_bit.hgc", bytes(flipped))
put("checkpoint", "bad_size_field.hgc", ckpt(meta, entries, size_delta=8))
# Structure errors behind a correct CRC: only the reader's bounds checks can catch these.
put("checkpoint", "bad_meta_not_json.hgc", ckpt(b"{step: 1", entries))
put("checkpoint", "bad_meta_array.hgc", ckpt(b"[1, 2]", entries))
put("checkpoint", "bad_unknown_dtype.hgc", ckpt(meta, [entry("w", "q7", [2], b"\x00\x00")]))
put("checkpoint", "bad_nbytes_mismatch.hgc", ckpt(meta, [entry("w", "f32", [2, 3], weights[:20])]))
put("checkpoint", "bad_duplicate_name.hgc", ckpt(meta, [entries[0], entries[0]]))
put("checkpoint", "bad_empty_name.hgc", ckpt(meta, [entry("", "f32", [1], b"\x00" * 4)]))
put("checkpoint", "bad_count_too_big.hgc", ckpt(meta, entries[:1], count=5))
put("checkpoint", "bad_count_huge.hgc", ckpt(meta, entries[:1], count=0xFFFFFFFF))
put("checkpoint", "bad_extra_before_crc.hgc", ckpt(meta, entries, extra=b"junk"))
put("checkpoint", "bad_negative_dim.hgc", ckpt(meta, [entry("w", "f32", [-1, 4], b"")]))
put("checkpoint", "bad_dims_overflow.hgc",
    ckpt(meta, [entry("w", "f64", [1 << 62, 1 << 62], b"", nbytes=0)]))
put("checkpoint", "bad_nbytes_huge.hgc",
    ckpt(meta, [entry("w", "u8", [1 << 40], b"", nbytes=1 << 40)]))
big_meta = b"HGCKPT" + struct.pack("<H", 1) + struct.pack("<Q", 40) + struct.pack("<Q", 1 << 60) + b"\x00" * 12
put("checkpoint", "bad_meta_len_huge.hgc", big_meta + struct.pack("<I", zlib.crc32(big_meta) & 0xFFFFFFFF))
print("corpus written to", os.path.join(HERE, "corpus"))
