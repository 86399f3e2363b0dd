package dev.kiln.llm.gguf;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Writes GGUF bytes field by field for the bad-file tests, where every field must be settable to a wrong value. The
 * good files of the other tests come from llama.cpp's own writer (tools/golden/gen_gguf.py); this one starts from a
 * valid little file (one string key, one F32 tensor of 2 x 4) that each case then breaks in one place.
 */
final class GgufBuilder {
    /** Little-endian bytes. */
    static final class Le {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Le u8(int v) { out.write(v); return this; }
        Le u32(long v) { for (int i = 0; i < 4; i++) out.write((int) (v >>> (8 * i))); return this; }
        Le u64(long v) { for (int i = 0; i < 8; i++) out.write((int) (v >>> (8 * i))); return this; }
        Le bytes(byte[] b) { out.writeBytes(b); return this; }
        Le str(String s) { byte[] b = s.getBytes(StandardCharsets.UTF_8); return u64(b.length).bytes(b); }
        int size() { return out.size(); }
        byte[] toBytes() { return out.toByteArray(); }
    }

    int magic = GgufParser.MAGIC;
    long version = 3;
    Long tensorCount, kvCount; // null: the real counts
    int alignment = 32;        // for padding only; the key is written by kv()
    final List<Consumer<Le>> kvs = new ArrayList<>();
    final List<Consumer<Le>> tensors = new ArrayList<>();
    int dataBytes = 32;
    Integer truncateTo;

    /** The valid base file. */
    static GgufBuilder valid() {
        return new GgufBuilder().kv("general.architecture", 8, v -> v.str("llama")).tensor("w", new long[] {4, 2}, 0, 0);
    }

    static GgufBuilder empty() { return new GgufBuilder(); }

    /** A key with value type {@code type} whose value {@code value} writes. */
    GgufBuilder kv(String key, int type, Consumer<Le> value) {
        kvs.add(le -> { le.str(key).u32(type); value.accept(le); });
        return this;
    }

    GgufBuilder tensor(String name, long[] ne, int type, long offset) {
        tensors.add(le -> {
            le.str(name).u32(ne.length);
            for (long d : ne) le.u64(d);
            le.u32(type).u64(offset);
        });
        return this;
    }

    GgufBuilder noTensors() { tensors.clear(); dataBytes = 0; return this; }

    byte[] build() {
        Le le = new Le().u32(magic).u32(version);
        le.u64(tensorCount != null ? tensorCount : tensors.size()).u64(kvCount != null ? kvCount : kvs.size());
        kvs.forEach(kv -> kv.accept(le));
        tensors.forEach(t -> t.accept(le));
        while (le.size() % alignment != 0) le.u8(0);
        for (int i = 0; i < dataBytes; i++) le.u8(i);
        byte[] b = le.toBytes();
        return truncateTo == null ? b : java.util.Arrays.copyOf(b, truncateTo);
    }
}
