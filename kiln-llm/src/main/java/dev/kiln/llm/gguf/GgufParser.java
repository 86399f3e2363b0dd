package dev.kiln.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Parses and checks a GGUF file's structure (gguf.cpp's {@code gguf_init_from_file_impl}, in Java): the header, the
 * metadata, the tensor infos and the data section they point into. Every count, length and offset is checked against
 * the file before it is used, so a hostile file fails with a {@link dev.kiln.llm.ModelFileException} naming the field.
 *
 * <p>Layout: magic {@code GGUF}, a 32-bit version, a 64-bit tensor count and metadata count (v2 and v3; v1 had 32-bit
 * counts and is refused), the key-value pairs, then per tensor its name, a 32-bit dimension count, 64-bit dimensions
 * (innermost first), a 32-bit ggml type and a 64-bit offset into the data section. The data section starts at the
 * next multiple of {@code general.alignment} (32 by default). v3 only added big-endian files, which Kiln refuses.
 */
final class GgufParser {
    static final int MAGIC = 0x46554747; // "GGUF" read little-endian
    static final int DEFAULT_ALIGNMENT = 32;
    static final String ALIGNMENT_KEY = "general.alignment";
    static final int MAX_DIMS = 4; // GGML_MAX_DIMS
    /** The least bytes a tensor info takes: name length, an empty name, dimension count, one dimension, type, offset. */
    static final long MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8;
    /** Alignments above this are refused: no writer uses more than a page, and the padding arithmetic stays far from overflow. */
    static final long MAX_ALIGNMENT = 1L << 30;

    /** What the file holds. */
    record Parsed(int version, MetadataReader.Metadata metadata, List<GgufTensor> tensors, int alignment, long dataOffset) {}

    private GgufParser() {}

    static Parsed parse(MemorySegment data, Path file) {
        Cursor in = new Cursor(data, file);
        int version = header(in);
        long tensorCount = in.count("tensor count", MIN_TENSOR_INFO_BYTES);
        long kvCount = in.count("metadata count", MetadataReader.MIN_KV_BYTES);
        MetadataReader.Metadata metadata = new MetadataReader(in).read(kvCount);
        int alignment = alignment(in, metadata);
        List<Info> infos = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (long i = 0; i < tensorCount; i++) {
            Info info = tensorInfo(in, i, alignment);
            if (!names.add(info.name)) throw in.error("tensor '" + info.name + "' appears twice; expected unique tensor names");
            infos.add(info);
        }
        long dataOffset = align(in.position(), alignment);
        List<GgufTensor> tensors = layout(in, infos, dataOffset);
        return new Parsed(version, metadata, tensors, alignment, dataOffset);
    }

    private static int header(Cursor in) {
        int magic = in.u32("magic");
        if (magic != MAGIC) {
            throw in.error("expected the magic GGUF (47 47 55 46) at offset 0, found " + String.format("%02X %02X %02X %02X",
                    magic & 0xFF, (magic >>> 8) & 0xFF, (magic >>> 16) & 0xFF, magic >>> 24));
        }
        int version = in.u32("version");
        return switch (version) {
            case 2, 3 -> version;
            case 1 -> throw in.error("version: GGUF version 1 (32-bit counts) is not supported; expected 2 or 3");
            // a big-endian file's version reads byte-swapped here
            case 0x02000000, 0x03000000 -> throw in.error("version: a big-endian GGUF file (version " + Integer.reverseBytes(version)
                    + ") is not supported; expected a little-endian version 2 or 3");
            default -> throw in.error("version: expected 2 or 3, found " + Integer.toUnsignedLong(version));
        };
    }

    private static int alignment(Cursor in, MetadataReader.Metadata metadata) {
        Object a = metadata.values().get(ALIGNMENT_KEY);
        if (a == null) return DEFAULT_ALIGNMENT;
        if (!(a instanceof Long n) || !metadata.types().get(ALIGNMENT_KEY).startsWith("UINT")) {
            throw in.error("metadata key '" + ALIGNMENT_KEY + "': expected an unsigned integer, found " + metadata.types().get(ALIGNMENT_KEY));
        }
        if (n <= 0 || n > MAX_ALIGNMENT || Long.bitCount(n) != 1) {
            throw in.error("metadata key '" + ALIGNMENT_KEY + "': expected a power of two from 1 to 2^30, found " + Long.toUnsignedString(n));
        }
        return (int) (long) n;
    }

    /** A tensor info as read, before its data range is checked against the file. */
    private record Info(String name, GgmlType type, int[] ne, long offset, long byteSize) {}

    private static Info tensorInfo(Cursor in, long index, int alignment) {
        String name = in.string("name of tensor " + index);
        String what = "tensor '" + name + "'";
        int nDims = in.u32("dimension count of " + what);
        if (nDims < 1 || nDims > MAX_DIMS) {
            throw in.error(what + ": dimension count: expected 1 to " + MAX_DIMS + ", found " + Integer.toUnsignedLong(nDims));
        }
        int[] ne = new int[nDims];
        long numel = 1;
        for (int d = 0; d < nDims; d++) {
            long n = in.u64("dimension " + d + " of " + what);
            if (n < 1 || n > Integer.MAX_VALUE) {
                throw in.error(what + ": dimension ne" + d + ": expected 1 to " + Integer.MAX_VALUE + ", found " + Long.toUnsignedString(n));
            }
            ne[d] = (int) n;
            numel = multiply(in, numel, n, what + ": the number of values " + Arrays.toString(ne));
        }
        int typeId = in.u32("type of " + what);
        GgmlType type = GgmlType.byId(Integer.toUnsignedLong(typeId)).orElseThrow(() -> in.error(what + ": unknown ggml type id "
                + Integer.toUnsignedLong(typeId) + "; expected one of ggml's types (F32 = 0 ... Q6_K = 14 ... BF16 = 30)"));
        if (ne[0] % type.blockSize() != 0) {
            throw in.error(what + ": ne0 = " + ne[0] + " is not a multiple of " + type + "'s block size " + type.blockSize());
        }
        long byteSize = multiply(in, type.rowBytes(ne[0]), numel / ne[0], what + ": the byte size");
        long offset = in.u64("offset of " + what);
        if (offset < 0 || offset % alignment != 0) {
            throw in.error(what + ": offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment);
        }
        return new Info(name, type, ne, offset, byteSize);
    }

    private static long multiply(Cursor in, long a, long b, String what) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw in.error(what + " overflows 64 bits");
        }
    }

    /** Checks every tensor's data range (within the file, no two overlapping) and slices it out of the mapping. */
    private static List<GgufTensor> layout(Cursor in, List<Info> infos, long dataOffset) {
        if (infos.isEmpty()) return List.of(); // a file without tensors may end before the padding
        if (dataOffset > in.size()) throw in.error("truncated: the data section starts at offset " + dataOffset + ", beyond the file's " + in.size() + " bytes");
        long dataBytes = in.size() - dataOffset;
        for (Info t : infos) {
            if (t.offset > dataBytes || t.byteSize > dataBytes - t.offset) {
                throw in.error("tensor '" + t.name + "': data [" + t.offset + ", " + Long.toUnsignedString(t.offset + t.byteSize)
                        + ") of the data section (" + t.byteSize + " bytes of " + t.type + " " + Arrays.toString(t.ne)
                        + ") extends past its end at " + dataBytes + " (file truncated or offset wrong)");
            }
        }
        List<Info> byOffset = new ArrayList<>(infos);
        byOffset.sort(Comparator.comparingLong(Info::offset));
        for (int i = 1; i < byOffset.size(); i++) {
            Info a = byOffset.get(i - 1), b = byOffset.get(i);
            if (b.offset < a.offset + a.byteSize) {
                throw in.error("tensor '" + b.name + "': data at offset " + b.offset + " overlaps tensor '" + a.name + "' at ["
                        + a.offset + ", " + (a.offset + a.byteSize) + ")");
            }
        }
        List<GgufTensor> out = new ArrayList<>(infos.size());
        for (Info t : infos) {
            MemorySegment slice = in.data().asSlice(dataOffset + t.offset, t.byteSize);
            out.add(new GgufTensor(in.file(), t.name, t.type, t.ne, t.offset, t.byteSize, slice));
        }
        return Collections.unmodifiableList(out);
    }

    static long align(long position, int alignment) {
        return (position + alignment - 1) / alignment * alignment; // position <= file size < 2^62: no overflow
    }
}
