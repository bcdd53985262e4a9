#!/usr/bin/env python3
# PTX rewrite for the simulated GPU (GPGPU-Sim reads it through GPGPUSIM_PTX_FILTER: a PTX
# module on stdin, the rewritten module on stdout; tests/gpu/gpusim.sh sets it). Each rewrite
# gives the bits a GPU gives; tests/gpu/README.md, "On a simulated GPU", has the known-answer
# case of each.
#
# cvt.rn.f16.f32 d, a (__float2half_rn, every F32 -> F16 store of halfgrad's kernels): the
# simulator rounds ties away from zero (its half-precision library is built with
# HALF_ROUND_TIES_TO_EVEN 0), so 2049 becomes 2050 where a GPU gives 2048. Rewritten as the
# integer steps of CUDA's own host conversion (cuda_fp16.hpp): round to nearest, ties to even,
# subnormals, overflow to inf, NaN to 0x7fff.
import re
import sys

count = 0


def f32_to_f16_rne(m):
    global count
    count += 1
    d, a = m.group(1), m.group(2)
    r = lambda name: "%%hgh%d%s" % (count, name)
    x, u, s, t, res, rem, e, sh, man, v, w, q = (r(n) for n in ("x", "u", "s", "t", "res", "rem", "e", "sh", "m", "v", "w", "q"))
    p1, p2, p3 = r("p"), r("q2"), r("q3")
    lines = [
        "{ .reg .b32 %s;" % ", ".join((x, u, s, t, res, rem, e, sh, man, v, w, q)),
        ".reg .pred %s, %s, %s;" % (p1, p2, p3),
        "mov.b32 %s, %s;" % (x, a),
        "and.b32 %s, %s, 0x7fffffff;" % (u, x),                      # |x|
        "shr.u32 %s, %s, 16; and.b32 %s, %s, 0x8000;" % (s, x, s, s),  # sign, in place
        # subnormal F16 (2^-25 < |x| < 2^-14): mantissa with its hidden bit, shifted right
        "shr.u32 %s, %s, 23; sub.u32 %s, 126, %s;" % (e, u, sh, e),
        "and.b32 %s, %s, 0x7fffff; or.b32 %s, %s, 0x800000;" % (man, u, man, man),
        "shr.u32 %s, %s, %s; or.b32 %s, %s, %s;" % (res, man, sh, res, s, res),
        "sub.u32 %s, 32, %s; shl.b32 %s, %s, %s;" % (t, sh, rem, man, t),
        # zero (|x| <= 2^-25): the sign alone, the rest below half a unit
        "setp.lo.u32 %s, %s, 0x33000001;" % (p1, u),
        "selp.b32 %s, %s, %s, %s; selp.b32 %s, %s, %s, %s;" % (res, s, res, p1, rem, u, rem, p1),
        # normal F16 (|x| >= 2^-14): rebias the exponent, keep 10 mantissa bits
        "sub.u32 %s, %s, 0x38000000; shr.u32 %s, %s, 13; or.b32 %s, %s, %s; shl.b32 %s, %s, 19;" % (v, u, v, v, v, s, v, w, u),
        "setp.hs.u32 %s, %s, 0x38800000;" % (p1, u),
        "selp.b32 %s, %s, %s, %s; selp.b32 %s, %s, %s, %s;" % (res, v, res, p1, rem, w, rem, p1),
        # too large for F16 (|x| >= 65520 rounds to inf): 0x7bff and a remainder that rounds up
        "or.b32 %s, %s, 0x7bff; setp.hi.u32 %s, %s, 0x477fefff;" % (v, s, p1, u),
        "selp.b32 %s, %s, %s, %s; selp.b32 %s, 0x80000000, %s, %s;" % (res, v, res, p1, rem, rem, p1),
        # inf keeps its sign, NaN becomes 0x7fff; nothing to round
        "or.b32 %s, %s, 0x7c00; setp.eq.u32 %s, %s, 0x7f800000; selp.b32 %s, %s, 0x7fff, %s;" % (v, s, p1, u, v, v, p1),
        "setp.hs.u32 %s, %s, 0x7f800000;" % (p1, u),
        "selp.b32 %s, %s, %s, %s; selp.b32 %s, 0, %s, %s;" % (res, v, res, p1, rem, rem, p1),
        # round to nearest, ties to even
        "setp.hi.u32 %s, %s, 0x80000000; setp.eq.u32 %s, %s, 0x80000000;" % (p1, rem, p2, rem),
        "and.b32 %s, %s, 1; setp.ne.u32 %s, %s, 0; and.pred %s, %s, %s; or.pred %s, %s, %s;" % (q, res, p3, q, p2, p2, p3, p1, p1, p2),
        "selp.u32 %s, 1, 0, %s; add.u32 %s, %s, %s;" % (q, p1, res, res, q),
        "cvt.u16.u32 %s, %s; }" % (d, res),
    ]
    return " ".join(lines)


ptx = sys.stdin.read()
ptx = re.sub(r"cvt\.rn\.f16\.f32\s+(%\w+)\s*,\s*(%\w+)\s*;", f32_to_f16_rne, ptx)
sys.stdout.write(ptx)
