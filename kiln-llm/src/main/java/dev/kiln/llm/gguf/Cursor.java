package dev.kiln.llm.gguf;

import dev.kiln.llm.ModelFileException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A read position in a GGUF file's bytes. Every read first checks that the bytes are there, so a truncated file or a
 * length larger than the file ends in a {@link ModelFileException} naming what was being read and where, never in an
 * index exception or an allocation of the claimed size. GGUF is little-endian.
 */
final class Cursor {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment data;
    private final Path file;
    // strict: a GGUF string is UTF-8, and a replaced byte would silently change a token or a key
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    private long position;

    Cursor(MemorySegment data, Path file) {
        this.data = data;
        this.file = file;
    }

    Path file() { return file; }

    long position() { return position; }

    long size() { return data.byteSize(); }

    long remaining() { return data.byteSize() - position; }

    MemorySegment data() { return data; }

    /** A typed error about this file. */
    ModelFileException error(String detail) { return new ModelFileException(file, detail); }

    /** Fails unless {@code n} more bytes are there for {@code what}. */
    void require(long n, String what) {
        if (n < 0 || n > remaining()) {
            throw error("truncated: " + what + " needs " + (n < 0 ? Long.toUnsignedString(n) : n) + " bytes at offset " + position
                    + ", the file has " + remaining() + " left (of " + data.byteSize() + ")");
        }
    }

    int u8(String what) {
        require(1, what);
        return data.get(ValueLayout.JAVA_BYTE, position++) & 0xFF;
    }

    short u16(String what) {
        require(2, what);
        short v = data.get(Dequantize.I16_LE, position);
        position += 2;
        return v;
    }

    /** A 32-bit field, raw (callers that mean it unsigned widen with {@link Integer#toUnsignedLong}). */
    int u32(String what) {
        require(4, what);
        int v = data.get(U32, position);
        position += 4;
        return v;
    }

    /** A 64-bit field, raw bits. */
    long u64(String what) {
        require(8, what);
        long v = data.get(U64, position);
        position += 8;
        return v;
    }

    /**
     * A 64-bit count or length that must fit the rest of the file: each of its items takes at least {@code minItemBytes}.
     * This bound is what keeps a claimed count of 2^60 from allocating anything.
     */
    long count(String what, long minItemBytes) { return count(what, "", minItemBytes); }

    /** {@link #count(String, long)} of the count described by {@code what + suffix}, which is only joined for an error. */
    private long count(String what, String suffix, long minItemBytes) {
        long at = position;
        if (remaining() < 8) require(8, what + suffix); // throws: truncated, named with the suffix
        long n = u64(what);
        long most = remaining() / minItemBytes;
        if (n < 0 || n > most) {
            throw error(what + suffix + " at offset " + at + ": " + Long.toUnsignedString(n) + " exceeds what the remaining " + remaining()
                    + " bytes can hold (at most " + most + ")");
        }
        return n;
    }

    /** A GGUF string: a 64-bit byte length, then that many bytes of UTF-8. */
    String string(String what) {
        long n = count(what, " length", 1);
        if (n == 0) return "";
        if (n > Integer.MAX_VALUE - 8) throw error(what + " at offset " + position + ": a string of " + n + " bytes is longer than Kiln reads");
        byte[] bytes = new byte[(int) n];
        MemorySegment.copy(data, ValueLayout.JAVA_BYTE, position, bytes, 0, (int) n);
        String s = new String(bytes, StandardCharsets.UTF_8); // the JDK's fast path; it replaces bad bytes with U+FFFD
        // a U+FFFD is either in the file or a replacement: only a strict decode tells which
        if (s.indexOf('\uFFFD') >= 0) {
            try {
                utf8.reset().decode(java.nio.ByteBuffer.wrap(bytes));
            } catch (CharacterCodingException e) {
                throw error(what + " at offset " + position + ": expected UTF-8 text, found an invalid byte sequence");
            }
        }
        position += n;
        return s;
    }

    /** Moves to {@code to}, which must lie within the file. */
    void seek(long to, String what) {
        if (to < 0 || to > data.byteSize()) throw error("truncated: " + what + " at offset " + to + " lies beyond the file's " + data.byteSize() + " bytes");
        position = to;
    }
}
