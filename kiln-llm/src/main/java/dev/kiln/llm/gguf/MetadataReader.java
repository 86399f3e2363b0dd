package dev.kiln.llm.gguf;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the key-value section of a GGUF file into Java values: STRING to {@link String}, every integer type to
 * {@link Long} (UINT8/16/32 zero-extended, UINT64 as its raw bits), FLOAT32 and FLOAT64 to {@link Double} (FLOAT32
 * widened exactly), BOOL to {@link Boolean}, ARRAY to an unmodifiable {@link List} of those ({@link PackedList} for
 * fixed-size elements). Each value's GGUF type is recorded as well, for the typed getters' errors.
 *
 * <p>Nothing is allocated for a claimed count before the bytes are there: arrays of fixed-size values are checked
 * against the remaining file before they are copied, and lists of strings or arrays grow only as their elements are
 * actually read.
 */
final class MetadataReader {
    /** Nested arrays deeper than this are refused: GGUF files use one level, and recursion must stay bounded. */
    static final int MAX_DEPTH = 16;
    /** The least bytes a key-value pair takes: key length, an empty key, value type, a one-byte value. */
    static final long MIN_KV_BYTES = 8 + 4 + 1;

    /** The values in file order, and each key's GGUF type as text ({@code UINT32}, {@code ARRAY of STRING}). */
    record Metadata(Map<String, Object> values, Map<String, String> types) {}

    private final Cursor in;

    MetadataReader(Cursor in) { this.in = in; }

    Metadata read(long count) {
        Map<String, Object> values = new LinkedHashMap<>();
        Map<String, String> types = new LinkedHashMap<>();
        for (long i = 0; i < count; i++) {
            String key = in.string("metadata key " + i);
            if (values.containsKey(key)) throw in.error("metadata key '" + key + "' appears twice; expected unique keys");
            ValueType type = type(in.u32("type of metadata key '" + key + "'"), "metadata key '" + key + "'");
            StringBuilder typeName = new StringBuilder(type.name());
            values.put(key, value(type, key, "value of metadata key '" + key + "'", 0, typeName));
            types.put(key, typeName.toString());
        }
        return new Metadata(Collections.unmodifiableMap(values), Collections.unmodifiableMap(types));
    }

    private ValueType type(int id, String what) {
        ValueType t = ValueType.byId(id);
        if (t == null) throw in.error(what + ": unknown value type " + Integer.toUnsignedLong(id) + "; expected 0 to 12 (UINT8 to FLOAT64)");
        return t;
    }

    /**
     * One value of {@code type}, described as {@code what} in errors (made once per key, not once per element of a
     * vocabulary's hundreds of thousands); for arrays, {@code typeName} gets " of ELEMENT" appended (once, for the first
     * level's elements).
     */
    private Object value(ValueType type, String key, String what, int depth, StringBuilder typeName) {
        return switch (type) {
            case UINT8 -> (long) in.u8(what);
            case INT8 -> (long) (byte) in.u8(what);
            case UINT16 -> in.u16(what) & 0xFFFFL;
            case INT16 -> (long) in.u16(what);
            case UINT32 -> Integer.toUnsignedLong(in.u32(what));
            case INT32 -> (long) in.u32(what);
            case UINT64, INT64 -> in.u64(what);
            case FLOAT32 -> (double) Float.intBitsToFloat(in.u32(what));
            case FLOAT64 -> Double.longBitsToDouble(in.u64(what));
            case BOOL -> bool(in.u8(what), key);
            case STRING -> in.string(what);
            case ARRAY -> array(key, what, depth + 1, typeName);
        };
    }

    private boolean bool(int b, String key) {
        // a BOOL is 0 or 1; any other byte would be read as some answer the writer did not mean
        if (b > 1) throw in.error("metadata key '" + key + "': expected a BOOL of 0 or 1, found " + b);
        return b == 1;
    }

    private List<?> array(String key, String what, int depth, StringBuilder typeName) {
        if (depth > MAX_DEPTH) throw in.error("metadata key '" + key + "': arrays nested deeper than " + MAX_DEPTH + " levels");
        ValueType element = type(in.u32("element type of metadata key '" + key + "'"), "elements of metadata key '" + key + "'");
        if (typeName != null) typeName.append(" of ").append(element.name());
        long n = in.count("length of metadata array '" + key + "'", element.minBytes);
        if (n > Integer.MAX_VALUE - 8) throw in.error("metadata array '" + key + "': " + n + " elements, more than a Java list holds");
        if (element.isFixed()) return packed(element, (int) n, key);
        List<Object> out = new ArrayList<>((int) Math.min(n, 1024)); // grows as elements are read, not as claimed
        for (long i = 0; i < n; i++) out.add(value(element, key, what, depth, null));
        return Collections.unmodifiableList(out);
    }

    private PackedList packed(ValueType element, int n, String key) {
        long bytes = (long) n * element.minBytes; // within the remaining file: count() bounded n by it
        if (bytes > Integer.MAX_VALUE - 8) throw in.error("metadata array '" + key + "': " + bytes + " bytes, more than Kiln copies");
        in.require(bytes, "metadata array '" + key + "'");
        byte[] copy = in.data().asSlice(in.position(), bytes).toArray(ValueLayout.JAVA_BYTE);
        in.seek(in.position() + bytes, "metadata array '" + key + "'");
        if (element == ValueType.BOOL) {
            for (int i = 0; i < copy.length; i++) if ((copy[i] & 0xFF) > 1) bool(copy[i] & 0xFF, key + "[" + i + "]");
        }
        return new PackedList(element, copy);
    }
}
