"""Writes small .npy files with NumPy for the .npy reader tests (kiln-core/src/test/resources/npy).

Run with `python3 tools/golden/gen_npy.py` (any NumPy >= 1.17: format 3.0 needs it).

Values follow one rule the Java test recomputes, so no expected data is stored beside the files:
element i (C order) of a file is
  bool            i % 2 == 1
  signed ints     i - 3
  unsigned ints   i
  floats          (i - 3) * 0.5
"""
import os

import numpy as np
from numpy.lib import format as npformat

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "kiln-core", "src", "test", "resources", "npy")


def values(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64)
    kind = np.dtype(dtype).kind
    if kind == "b":
        v = i % 2 == 1
    elif kind == "i":
        v = i - 3
    elif kind == "u":
        v = i
    else:
        v = (i - 3) * 0.5
    return v.astype(dtype).reshape(shape)


def save(name, array, version=None):
    with open(os.path.join(OUT, name + ".npy"), "wb") as f:
        npformat.write_array(f, array, version=version, allow_pickle=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".npy"):
            os.remove(os.path.join(OUT, f))
    # every numeric dtype, little endian, shape (2, 3)
    for code in ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]:
        save("le_" + code, values("<" + code if code not in ("b1", "i1", "u1") else code, (2, 3)))
    # big endian multi-byte dtypes
    for code in ["i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]:
        save("be_" + code, values(">" + code, (2, 3)))
    # shapes: 0-d, 1-d, size 0, rank 4
    save("scalar_f4", values("<f4", ()))
    save("vector_i8", values("<i8", (5,)))
    save("empty_f4", values("<f4", (2, 0, 3)))
    save("rank4_f4", values("<f4", (2, 1, 3, 2)))
    # Fortran order: the same logical values as the C-order file
    save("fortran_f4", np.asfortranarray(values("<f4", (2, 3, 4))))
    save("fortran_be_i2", np.asfortranarray(values(">i2", (3, 2))))
    # header versions 2.0 and 3.0
    save("v2_f4", values("<f4", (2, 3)), version=(2, 0))
    save("v3_f4", values("<f4", (2, 3)), version=(3, 0))
    # dtypes NumPy has and Kiln does not
    save("bad_complex", np.array([1 + 2j, 3 - 4j], dtype="<c8"))
    save("bad_object", np.array([1, "a", None], dtype=object))
    save("bad_structured", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))
    save("bad_unicode", np.array(["ab", "c"]))
    # truncated data: the header promises 6 f4 values, the file holds 5 and a half
    with open(os.path.join(OUT, "le_f4.npy"), "rb") as f:
        whole = f.read()
    with open(os.path.join(OUT, "bad_truncated_data.npy"), "wb") as f:
        f.write(whole[:-2])
    # truncated header: the file ends inside the header dictionary
    with open(os.path.join(OUT, "bad_truncated_header.npy"), "wb") as f:
        f.write(whole[:30])


if __name__ == "__main__":
    main()
