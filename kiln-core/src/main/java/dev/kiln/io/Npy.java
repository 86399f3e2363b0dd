package dev.kiln.io;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * Reads and writes NumPy {@code .npy} files (format versions 1.0, 2.0 and 3.0).
 *
 * <p>Dtypes: {@code b1} (bool), {@code i1 i2 i4 i8}, {@code u1 u2 u4 u8}, {@code f2 f4 f8} in either
 * byte order; data is returned in native order. Fortran-order files are read and transposed to C order.
 * Complex, object, string, datetime and structured dtypes are rejected with an {@link NpyFormatException},
 * as are bad headers and truncated data.
 *
 * <p>Writing always produces format 1.0 (2.0 only for a header too long for 1.0), little-endian, C order.
 * {@code bf16} has no NumPy dtype and packed dtypes have no element values: writing either is an
 * {@link IllegalArgumentException} (cast bf16 to f32 first; that is exact). Writes are atomic: the data
 * goes to a temporary file in the target's directory that is then moved over the target, so a failed
 * write leaves no partial file and the old content, if any, untouched.
 */
public final class Npy {
    private Npy() {}

    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final int CHUNK = 1 << 30; // a ByteBuffer view is int-indexed

    /**
     * The description of an array: its dtype, shape and (as stored) byte order, order and format version.
     *
     * @param dtype        element type
     * @param shape        dimensions (empty for a 0-d array)
     * @param order        byte order of the stored data
     * @param fortranOrder whether the stored data is in Fortran (column-major) order
     * @param version      format major version (1, 2 or 3)
     * @param dataOffset   byte offset of the data in the file
     */
    public record Header(DType dtype, int[] shape, ByteOrder order, boolean fortranOrder, int version, long dataOffset) {
        public Header {
            shape = shape.clone();
        }

        @Override public int[] shape() { return shape.clone(); }

        /** Number of elements. */
        public long numel() { return Shape.of(shape).numel(); }

        @Override
        public String toString() { return dtype + " " + Arrays.toString(shape); }
    }

    /**
     * An array as read: dense C-order elements in native byte order in {@code data}, whose memory the
     * garbage collector owns (an automatic arena).
     */
    public record Array(DType dtype, int[] shape, MemorySegment data) {
        public Array {
            shape = shape.clone();
        }

        @Override public int[] shape() { return shape.clone(); }

        /** Number of elements. */
        public long numel() { return Shape.of(shape).numel(); }

        /** The data as a tensor on {@code device} (a copy). */
        public Tensor toTensor(Device device) {
            return Tensor.fromSegment(data, dtype, shape).to(device).realize();
        }
    }

    // ---------------------------------------------------------------------------------------------- reading

    /**
     * Reads only the header of {@code file}.
     *
     * @throws NpyFormatException   if the header is malformed or names a dtype Kiln does not have
     * @throws UncheckedIOException if the file cannot be read (a missing file has a {@link java.nio.file.NoSuchFileException} cause)
     */
    public static Header readHeader(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return header(file, ch);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + reason(e), e);
        }
    }

    /**
     * Reads {@code file} into memory as dense C-order elements in native byte order.
     *
     * @throws NpyFormatException   if the file is malformed, truncated or of an unsupported dtype
     * @throws UncheckedIOException if the file cannot be read
     */
    public static Array readArray(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            Header h = header(file, ch);
            long bytes = h.dtype().byteSize(h.numel());
            long available = ch.size() - h.dataOffset();
            if (available != bytes) {
                throw new NpyFormatException(file, (available < bytes ? "truncated data: " : "trailing bytes after the data: ")
                        + "expected " + bytes + " data bytes for " + h + ", found " + available);
            }
            MemorySegment data = Arena.ofAuto().allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
            readFully(file, ch, h.dataOffset(), data);
            swapToNative(data, h.dtype().itemSize(), h.order());
            return new Array(h.dtype(), h.shape(), h.fortranOrder() ? fortranToC(data, h.dtype().itemSize(), h.shape()) : data);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + reason(e), e);
        }
    }

    /** Reads {@code file} as a realised tensor on the default device ({@link Tensor#defaultDevice()}). */
    public static Tensor read(Path file) { return read(file, Tensor.defaultDevice()); }

    /**
     * Reads {@code file} as a realised tensor on {@code device}.
     *
     * @throws NpyFormatException   if the file is malformed, truncated or of an unsupported dtype
     * @throws UncheckedIOException if the file cannot be read
     */
    public static Tensor read(Path file, Device device) { return readArray(file).toTensor(device); }

    private static Header header(Path file, FileChannel ch) throws IOException {
        ByteBuffer pre = ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN);
        int got = readUpTo(ch, pre, 0);
        byte[] start = Arrays.copyOf(pre.array(), got);
        if (got < 6 || !Arrays.equals(Arrays.copyOf(start, 6), MAGIC)) {
            throw new NpyFormatException(file, "expected the .npy magic string \\x93NUMPY at the start, found " + printable(start, 6));
        }
        if (got < 8) throw new NpyFormatException(file, "truncated header: expected a format version after the magic string, found end of file");
        int major = start[6] & 0xFF, minor = start[7] & 0xFF;
        if (major < 1 || major > 3 || minor != 0) {
            throw new NpyFormatException(file, "expected format version 1.0, 2.0 or 3.0, found " + major + "." + minor);
        }
        int lenBytes = major == 1 ? 2 : 4;
        ByteBuffer lenBuf = ByteBuffer.allocate(lenBytes).order(ByteOrder.LITTLE_ENDIAN);
        if (readUpTo(ch, lenBuf, 8) < lenBytes) {
            throw new NpyFormatException(file, "truncated header: expected a " + lenBytes + "-byte header length, found end of file");
        }
        long headerLen = major == 1 ? lenBuf.getShort(0) & 0xFFFFL : lenBuf.getInt(0) & 0xFFFF_FFFFL;
        long dataOffset = 8 + lenBytes + headerLen;
        if (headerLen > 1 << 24) {
            throw new NpyFormatException(file, "expected a header of at most 16 MiB, found a header length of " + headerLen + " bytes");
        }
        ByteBuffer text = ByteBuffer.allocate((int) headerLen);
        int n = readUpTo(ch, text, 8 + lenBytes);
        if (n < headerLen) {
            throw new NpyFormatException(file, "truncated header: expected " + headerLen + " header bytes, found " + n);
        }
        String dict = new String(text.array(), major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        return parseHeader(file, dict, major, dataOffset);
    }

    /**
     * What went wrong with a file, in words: the JDK's exceptions for a missing file or a refused access carry only a
     * path as their message, and on write that path is the temporary file's, which the caller never named.
     */
    private static String reason(IOException e) {
        return switch (e) {
            case java.nio.file.NoSuchFileException n -> "no such file or directory";
            case java.nio.file.AccessDeniedException a -> "permission denied";
            case java.nio.file.FileSystemException f when f.getReason() != null -> f.getReason();
            default -> e.getMessage();
        };
    }

    private static Header parseHeader(Path file, String text, int version, long dataOffset) {
        Map<String, Literal> dict = new HeaderParser(file, text.strip()).dict();
        // exactly these keys, as NumPy requires: an extra key is a header this reader does not understand
        for (String key : new String[] {"descr", "fortran_order", "shape"}) {
            if (!dict.containsKey(key) || dict.size() != 3) {
                throw new NpyFormatException(file, "expected the header keys descr, fortran_order and shape, found " + dict.keySet());
            }
        }
        if (!(dict.get("descr").value() instanceof String descr)) {
            throw new NpyFormatException(file, "unsupported dtype " + dict.get("descr").source()
                    + " (a structured dtype); Kiln reads plain " + SUPPORTED);
        }
        if (!(dict.get("fortran_order").value() instanceof Boolean fortran)) {
            throw new NpyFormatException(file, "expected fortran_order True or False, found " + dict.get("fortran_order").source());
        }
        if (!(dict.get("shape").value() instanceof long[] dims)) {
            throw new NpyFormatException(file, "expected shape to be a tuple of integers, found " + dict.get("shape").source());
        }
        int[] shape = new int[dims.length];
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0 || dims[i] > Integer.MAX_VALUE) {
                throw new NpyFormatException(file, "expected dimensions between 0 and " + Integer.MAX_VALUE + ", found shape "
                        + dict.get("shape").source());
            }
            shape[i] = (int) dims[i];
        }
        ByteOrder order = switch (descr.isEmpty() ? ' ' : descr.charAt(0)) {
            case '<' -> ByteOrder.LITTLE_ENDIAN;
            case '>' -> ByteOrder.BIG_ENDIAN;
            default -> ByteOrder.nativeOrder(); // '|' (byte order irrelevant), '=' or none: native
        };
        String code = descr.isEmpty() || "<>|=".indexOf(descr.charAt(0)) < 0 ? descr : descr.substring(1);
        DType dtype = switch (code) {
            case "b1", "?" -> DType.BOOL;
            case "i1" -> DType.I8;
            case "u1" -> DType.U8;
            case "i2" -> DType.I16;
            case "u2" -> DType.U16;
            case "i4" -> DType.I32;
            case "u4" -> DType.U32;
            case "i8" -> DType.I64;
            case "u8" -> DType.U64;
            case "f2" -> DType.F16;
            case "f4" -> DType.F32;
            case "f8" -> DType.F64;
            default -> throw new NpyFormatException(file, "unsupported dtype '" + descr + "'" + kindName(code)
                    + "; Kiln reads " + SUPPORTED);
        };
        return new Header(dtype, shape, order, fortran, version, dataOffset);
    }

    private static final String SUPPORTED = "b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 and f8 (either byte order)";

    private static String kindName(String code) {
        if (code.isEmpty()) return "";
        return switch (code.charAt(0)) {
            case 'c' -> " (complex)";
            case 'O' -> " (Python objects)";
            case 'U', 'S', 'a' -> " (strings)";
            case 'V' -> " (raw or structured records)";
            case 'M', 'm' -> " (dates and times)";
            case 'f' -> " (a float width Kiln does not have)";
            default -> "";
        };
    }

    /** A parsed Python literal and the text it came from (for messages). */
    private record Literal(Object value, String source) {}

    /** The Python literal subset NumPy writes headers in: a dict of strings, booleans, ints, tuples and lists. */
    private static final class HeaderParser {
        // NumPy's own headers nest at most a few levels (a structured dtype's fields); the bound keeps a hostile
        // header's nesting from recursing into a StackOverflowError
        static final int MAX_DEPTH = 64;
        private final Path file;
        private final String s;
        private int pos;
        private int depth;

        HeaderParser(Path file, String s) {
            this.file = file;
            this.s = s;
        }

        Map<String, Literal> dict() {
            expect('{');
            Map<String, Literal> out = new LinkedHashMap<>();
            skipSpace();
            while (peek() != '}') {
                Literal key = literal();
                if (!(key.value() instanceof String k)) throw error("a string key", key.source());
                skipSpace();
                expect(':');
                out.put(k, literal());
                skipSpace();
                if (peek() == ',') {
                    pos++;
                    skipSpace();
                } else if (peek() != '}') {
                    throw error("',' or '}'", rest());
                }
            }
            pos++;
            skipSpace();
            if (pos != s.length()) throw error("the end of the header after '}'", rest());
            return out;
        }

        private Literal literal() {
            skipSpace();
            int start = pos;
            char c = peek();
            Object v;
            if (c == '\'' || c == '"') {
                int end = s.indexOf(c, pos + 1);
                if (end < 0) throw error("a closing quote", rest());
                v = s.substring(pos + 1, end);
                pos = end + 1;
            } else if (c == '(' || c == '[') {
                char close = c == '(' ? ')' : ']';
                if (++depth > MAX_DEPTH) {
                    throw new NpyFormatException(file, "malformed header: tuples and lists nested deeper than " + MAX_DEPTH
                            + " levels at character " + pos);
                }
                pos++;
                java.util.List<Literal> items = new java.util.ArrayList<>();
                skipSpace();
                while (peek() != close) {
                    items.add(literal());
                    skipSpace();
                    if (peek() == ',') {
                        pos++;
                        skipSpace();
                    } else if (peek() != close) {
                        throw error("',' or '" + close + "'", rest());
                    }
                }
                pos++;
                depth--;
                boolean allInts = items.stream().allMatch(l -> l.value() instanceof Long);
                v = c == '(' && allInts ? items.stream().mapToLong(l -> (Long) l.value()).toArray() : items;
            } else if (s.startsWith("True", pos) || s.startsWith("False", pos)) {
                v = s.startsWith("True", pos);
                pos += (Boolean) v ? 4 : 5;
            } else if (c == '-' || Character.isDigit(c)) {
                int end = pos + 1;
                while (end < s.length() && Character.isDigit(s.charAt(end))) end++;
                if (end < s.length() && s.charAt(end) == 'L') end++; // Python 2 longs
                try {
                    v = Long.parseLong(s.substring(pos, end).replace("L", ""));
                } catch (NumberFormatException e) {
                    throw error("an integer", s.substring(pos, end));
                }
                pos = end;
            } else {
                throw error("a Python literal", rest());
            }
            return new Literal(v, s.substring(start, pos));
        }

        private void expect(char c) {
            skipSpace();
            if (peek() != c) throw error("'" + c + "'", rest());
            pos++;
        }

        private char peek() {
            if (pos >= s.length()) throw error("more header text", "the end of the header");
            return s.charAt(pos);
        }

        private void skipSpace() {
            while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
        }

        private String rest() {
            String r = s.substring(pos);
            return "'" + (r.length() > 40 ? r.substring(0, 40) + "..." : r) + "'";
        }

        private NpyFormatException error(String expected, String found) {
            return new NpyFormatException(file, "malformed header: expected " + expected + " at character " + pos + ", found " + found);
        }
    }

    private static int readUpTo(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        int total = 0;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, position + total);
            if (n < 0) break;
            total += n;
        }
        return total;
    }

    private static void readFully(Path file, FileChannel ch, long position, MemorySegment data) throws IOException {
        for (long off = 0; off < data.byteSize(); off += CHUNK) {
            long len = Math.min(CHUNK, data.byteSize() - off);
            int n = readUpTo(ch, data.asSlice(off, len).asByteBuffer(), position + off);
            if (n < len) {
                throw new NpyFormatException(file, "truncated data: expected " + data.byteSize() + " data bytes, found " + (off + n));
            }
        }
    }

    private static String printable(byte[] bytes, int max) {
        if (bytes.length == 0) return "an empty file";
        StringBuilder sb = new StringBuilder("'");
        for (int i = 0; i < Math.min(max, bytes.length); i++) {
            int b = bytes[i] & 0xFF;
            if (b >= 0x20 && b < 0x7F && b != '\\' && b != '\'') sb.append((char) b);
            else sb.append(String.format("\\x%02x", b));
        }
        return sb.append("'").toString();
    }

    // ---------------------------------------------------------------------------------------------- layout

    /** Reverses the bytes of every element when {@code order} is not the native order. */
    private static void swapToNative(MemorySegment data, int itemSize, ByteOrder order) {
        if (itemSize == 1 || order == ByteOrder.nativeOrder()) return;
        long n = data.byteSize() / itemSize;
        switch (itemSize) {
            case 2 -> {
                for (long i = 0; i < n; i++) data.setAtIndex(I16, i, Short.reverseBytes(data.getAtIndex(I16, i)));
            }
            case 4 -> {
                for (long i = 0; i < n; i++) data.setAtIndex(I32, i, Integer.reverseBytes(data.getAtIndex(I32, i)));
            }
            case 8 -> {
                for (long i = 0; i < n; i++) data.setAtIndex(I64, i, Long.reverseBytes(data.getAtIndex(I64, i)));
            }
            default -> throw new IllegalStateException("no byte swap for " + itemSize + "-byte elements");
        }
    }

    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;

    /** The elements of a Fortran-order array rearranged into C order (a new segment). */
    private static MemorySegment fortranToC(MemorySegment src, int itemSize, int[] shape) {
        int rank = shape.length;
        long n = Shape.of(shape).numel();
        if (rank < 2 || n == 0) return src; // both orders coincide
        long[] fStride = new long[rank];
        long s = 1;
        for (int d = 0; d < rank; d++) {
            fStride[d] = s;
            s *= shape[d];
        }
        MemorySegment dst = Arena.ofAuto().allocate(src.byteSize(), 64);
        int[] idx = new int[rank];
        long fOff = 0;
        for (long c = 0; c < n; c++) {
            MemorySegment.copy(src, fOff * itemSize, dst, c * itemSize, itemSize);
            // advance the C-order index (last axis fastest) and keep the Fortran offset in step
            for (int d = rank - 1; d >= 0; d--) {
                if (++idx[d] < shape[d]) {
                    fOff += fStride[d];
                    break;
                }
                fOff -= (long) (shape[d] - 1) * fStride[d];
                idx[d] = 0;
            }
        }
        return dst;
    }

    // ---------------------------------------------------------------------------------------------- writing

    /**
     * Writes {@code tensor} (realising it first) to {@code file}, atomically.
     *
     * @throws IllegalArgumentException if its dtype has no NumPy counterpart (bf16, packed)
     * @throws UncheckedIOException     if the file cannot be written
     */
    public static void write(Path file, Tensor tensor) {
        Objects.requireNonNull(tensor, "tensor");
        descr(tensor.dtype()); // before computing anything
        Buffer b = tensor.buffer();
        write(file, b.dtype(), tensor.dims(), b.segment());
    }

    /**
     * Writes the first {@code numel(shape)} elements of {@code buffer} with the given shape, atomically.
     *
     * @throws IllegalArgumentException if the buffer holds fewer elements than the shape or its dtype has no NumPy counterpart
     */
    public static void write(Path file, Buffer buffer, int... shape) {
        long n = Shape.of(shape).numel();
        if (buffer.count() < n) {
            throw new IllegalArgumentException("Npy.write: shape " + Arrays.toString(shape) + " needs " + n + " elements, "
                    + buffer + " holds " + buffer.count());
        }
        write(file, buffer.dtype(), shape, buffer.segment());
    }

    /**
     * Writes {@code data} (dense C-order elements of {@code dtype} in native byte order; its first
     * {@code dtype.byteSize(numel(shape))} bytes) to {@code file}, atomically.
     *
     * @throws IllegalArgumentException if {@code data} is too small or the dtype has no NumPy counterpart
     * @throws UncheckedIOException     if the file cannot be written
     */
    public static void write(Path file, DType dtype, int[] shape, MemorySegment data) {
        String descr = descr(dtype);
        Shape s = Shape.of(shape);
        long bytes = dtype.byteSize(s.numel());
        if (data.byteSize() < bytes) {
            throw new IllegalArgumentException("Npy.write: shape " + s + " of " + dtype + " needs " + bytes + " bytes, the data has "
                    + data.byteSize());
        }
        byte[] header = header(descr, shape);
        MemorySegment body = data.asSlice(0, bytes);
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN && dtype.itemSize() > 1) {
            MemorySegment copy = Arena.ofAuto().allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
            copy.copyFrom(body);
            swapToNative(copy, dtype.itemSize(), ByteOrder.LITTLE_ENDIAN); // the same swap, either way round
            body = copy;
        }
        Path target = file.toAbsolutePath();
        Path tmp = null;
        try {
            tmp = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                writeFully(ch, ByteBuffer.wrap(header));
                for (long off = 0; off < bytes; off += CHUNK) {
                    writeFully(ch, body.asSlice(off, Math.min(CHUNK, bytes - off)).asByteBuffer());
                }
            }
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + reason(e), e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // the write already failed; that error is the one to report
                }
            }
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** The little-endian NumPy descr of {@code dtype}. */
    private static String descr(DType dtype) {
        return switch (dtype) {
            case BOOL -> "|b1";
            case I8 -> "|i1";
            case U8 -> "|u1";
            case I16 -> "<i2";
            case U16 -> "<u2";
            case I32 -> "<i4";
            case U32 -> "<u4";
            case I64 -> "<i8";
            case U64 -> "<u8";
            case F16 -> "<f2";
            case F32 -> "<f4";
            case F64 -> "<f8";
            case BF16 -> throw new IllegalArgumentException("Npy.write: bf16 has no NumPy dtype; cast the tensor to f32 first (exact)");
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("Npy.write: packed dtype " + dtype
                    + " has no NumPy dtype; dequantise it first");
        };
    }

    /** Magic, version, length and the dict padded with spaces so the data starts at a multiple of 64. */
    private static byte[] header(String descr, int[] shape) {
        String tuple = shape.length == 1 ? "(" + shape[0] + ",)"
                : Arrays.stream(shape).mapToObj(Integer::toString).collect(Collectors.joining(", ", "(", ")"));
        String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + tuple + ", }";
        int version = 10 + dict.length() + 1 > 0xFFFF ? 2 : 1;
        int prefix = version == 1 ? 10 : 12;
        int total = (prefix + dict.length() + 1 + 63) / 64 * 64;
        byte[] text = (dict + " ".repeat(total - prefix - dict.length() - 1) + "\n").getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer out = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        out.put(MAGIC).put((byte) version).put((byte) 0);
        if (version == 1) out.putShort((short) text.length);
        else out.putInt(text.length);
        return out.put(text).array();
    }
}
