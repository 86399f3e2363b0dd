"""Reference for the serving API's f16/bf16 conversions over all 65,536 bit patterns, computed with NumPy.

Writes kiln-core/src/test/resources/serve/half_reference.json: SHA-256 digests of little-endian arrays
(so the file stays small) plus a few spot values. Run with `python3 tools/golden/gen_serve_half.py`.

Arrays (the Java test builds the same inputs and hashes its own results):
  f16_decode:  f32 bits of every f16 pattern 0..65535 converted to f32 (NaNs canonicalised to 0x7fc00000)
  f16_encode:  f16 bits of probe values rounded to f16 (NumPy's astype, round to nearest even)
  bf16_decode: f32 bits of every bf16 pattern (NaNs canonicalised)
  bf16_encode: bf16 bits of the probe values rounded to bf16 (nearest even), computed in float64
Probes of a format: for each pattern p with finite value v and finite successor w (same sign), the f32
values v, (v+w)/2 and its f32 neighbours toward v and toward w, in pattern order; all exact in f32.
"""
import hashlib
import json
import os

import numpy as np

CANON_NAN = 0x7FC00000


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).astype(a.dtype.newbyteorder('<')).tobytes()).hexdigest()


def canon(bits32):
    f = bits32.view(np.float32)
    out = bits32.copy()
    out[np.isnan(f)] = CANON_NAN
    return out


def decode_f16(p):
    return p.view(np.float16).astype(np.float32)


def decode_bf16(p):
    return (p.astype(np.uint32) << 16).view(np.float32)


def probes(decode):
    pats = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    v = decode(pats)
    # successor of a pattern in magnitude: pattern + 1 (same sign)
    nxt = np.empty_like(pats)
    nxt[:] = pats + np.uint16(1)
    w = decode(nxt)
    ok = np.isfinite(v) & np.isfinite(w) & ((pats & 0x7FFF) != 0x7FFF)
    out = []
    for i in np.nonzero(ok)[0]:
        a, b = np.float64(v[i]), np.float64(w[i])
        mid = np.float32((a + b) / 2)
        assert np.float64(mid) == (a + b) / 2
        out += [v[i], mid, np.nextafter(mid, v[i]), np.nextafter(mid, w[i])]
    return np.array(out, dtype=np.float32)


def bf16_round(x):
    """Nearest-even bf16 bits of f32 values, by comparing distances in float64 (independent of bit tricks)."""
    bits = x.view(np.uint32)
    lo = (bits >> 16).astype(np.uint32)
    hi = lo + 1
    lo_v = (lo << 16).view(np.float32).astype(np.float64)
    hi_v = (hi << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    xv = x.astype(np.float64)
    d_lo = np.abs(xv - lo_v)
    d_hi = np.abs(hi_v - xv)
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & ((lo & 1) == 1))
    return np.where(pick_hi, hi, lo).astype(np.uint16)


def main():
    pats = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    with np.errstate(over='ignore', invalid='ignore'):
        f16_dec = canon(decode_f16(pats).view(np.uint32))
        bf16_dec = canon(decode_bf16(pats).view(np.uint32))
        p16 = probes(decode_f16)
        f16_enc = p16.astype(np.float16).view(np.uint16)
        pb = probes(decode_bf16)
        bf16_enc = bf16_round(pb)
    spots = {
        "f16_decode": {str(int(p)): float(decode_f16(np.array([p], np.uint16))[0]) for p in [0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0xC000]},
        "f16_encode": {repr(float(v)): int(np.float32(v).astype(np.float16).view(np.uint16)) for v in [65519.0, 65520.0, 1.0009765625, 1e-8, 3e-8, -2.5]},
    }
    out = {
        "f16_decode": digest(f16_dec),
        "bf16_decode": digest(bf16_dec),
        "f16_encode": {"probes": int(p16.size), "digest": digest(f16_enc)},
        "bf16_encode": {"probes": int(pb.size), "digest": digest(bf16_enc)},
        "spots": spots,
    }
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'kiln-core', 'src', 'test', 'resources', 'serve', 'half_reference.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    print(json.dumps(out, indent=1))


if __name__ == '__main__':
    main()
