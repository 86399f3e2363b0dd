package dev.kiln.llm.gguf;

import dev.kiln.llm.ModelFileException;
import dev.kiln.llm.mapping.MappedFiles;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * A GGUF file (versions 2 and 3, little-endian), memory-mapped through FFM and read in place: the metadata is parsed
 * when the file is opened, the tensors' data is never copied onto the heap. Everything in the file is checked on open
 * (counts, lengths and offsets against the file's size, alignment, overlaps, names, dimensions against the types'
 * blocks); a file that fails gets a {@link ModelFileException} naming the file, the field and what was expected and
 * found, never an index exception or an allocation of a claimed size.
 *
 * <h2>Metadata values</h2>
 * {@link #metadata()} maps each key, in file order, to its value converted as follows:
 * <ul>
 *   <li>STRING: {@link String} (the file's UTF-8, checked: invalid UTF-8 is an error);</li>
 *   <li>UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64: {@link Long}; the unsigned types up to 32 bits are
 *       zero-extended, UINT64 keeps its raw bits (so 2^64 - 1 reads as -1: use {@link Long#toUnsignedString});</li>
 *   <li>FLOAT32, FLOAT64: {@link Double} (FLOAT32 widened exactly);</li>
 *   <li>BOOL: {@link Boolean} (a byte other than 0 or 1 is an error);</li>
 *   <li>ARRAY: an unmodifiable {@link List} of the above, nested for arrays of arrays. Arrays of fixed-size values are
 *       kept compact, as the file's bytes, and convert on {@code get}; {@link #floats}, {@link #ints} and
 *       {@link #longs} return them as primitive arrays.</li>
 * </ul>
 * The typed getters ({@link #string}, {@link #integer}, ...) throw a {@link ModelFileException} naming the key, the
 * expected type and the type found when a key is absent or of another type.
 *
 * <p>The file stays mapped until {@link #close()}; tensors' {@link GgufTensor#data()} and tensors wrapped from it by
 * {@link GgufTensor#toTensor()} must not be used after that. The mapping may be read from any thread.
 */
public final class GgufFile implements AutoCloseable {
    private final Path file;
    private final Arena arena;
    private final GgufParser.Parsed parsed;
    private final Map<String, GgufTensor> byName;

    private GgufFile(Path file, Arena arena, GgufParser.Parsed parsed) {
        this.file = file;
        this.arena = arena;
        this.parsed = parsed;
        Map<String, GgufTensor> m = new LinkedHashMap<>();
        for (GgufTensor t : parsed.tensors()) m.put(t.name(), t);
        this.byName = m;
    }

    /**
     * Maps and parses {@code file}.
     *
     * @throws ModelFileException if the file cannot be read or is not a valid GGUF v2/v3 file
     */
    public static GgufFile open(Path file) {
        return MappedFiles.open(file, (arena, data) -> new GgufFile(file, arena, GgufParser.parse(data, file)));
    }

    /** Parses GGUF bytes already in memory (tests, fuzzing); {@code name} is used in errors. Closing releases nothing. */
    static GgufFile parse(MemorySegment data, Path name) {
        return new GgufFile(name, null, GgufParser.parse(data, name));
    }

    /** The file's path. */
    public Path file() { return file; }

    /** The format version, 2 or 3. */
    public int version() { return parsed.version(); }

    /** The data alignment: {@code general.alignment}, 32 when absent. */
    public int alignment() { return parsed.alignment(); }

    /** The file offset where the data section (tensor offset 0) starts. */
    public long dataOffset() { return parsed.dataOffset(); }

    /** Every metadata value by key, in file order, converted as the class description says. Unmodifiable. */
    public Map<String, Object> metadata() { return parsed.metadata().values(); }

    /** The GGUF type of a key's value as text ({@code UINT32}, {@code ARRAY of STRING}), or empty when absent. */
    public Optional<String> typeOf(String key) { return Optional.ofNullable(parsed.metadata().types().get(key)); }

    /** The tensors in file order. Unmodifiable. */
    public List<GgufTensor> tensors() { return parsed.tensors(); }

    /** The tensor named {@code name}, or empty. */
    public Optional<GgufTensor> findTensor(String name) { return Optional.ofNullable(byName.get(name)); }

    /**
     * The tensor named {@code name}.
     *
     * @throws ModelFileException if the file has none by that name
     */
    public GgufTensor tensor(String name) {
        GgufTensor t = byName.get(name);
        if (t == null) throw new ModelFileException(file, "tensor '" + name + "': expected in the file, not found among its " + byName.size() + " tensors");
        return t;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // typed metadata getters

    /** A STRING value. */
    public String string(String key) { return get(key, String.class, "STRING"); }

    /** A STRING value, or empty when the key is absent (present with another type is still an error). */
    public Optional<String> optionalString(String key) { return has(key) ? Optional.of(string(key)) : Optional.empty(); }

    /** A value of any integer type (UINT64 as raw bits). */
    public long integer(String key) { return get(key, Long.class, "an integer (UINT8 to INT64)"); }

    /** An integer value, or empty when the key is absent. */
    public OptionalLong optionalInteger(String key) { return has(key) ? OptionalLong.of(integer(key)) : OptionalLong.empty(); }

    /** A FLOAT32 or FLOAT64 value; an integer value is accepted too, converted to the nearest double. */
    public double real(String key) {
        Object v = require(key);
        if (v instanceof Double d) return d;
        if (v instanceof Long l) return parsed.metadata().types().get(key).equals("UINT64") ? unsignedToDouble(l) : l;
        throw wrongType(key, "a number (FLOAT32, FLOAT64 or an integer)");
    }

    /** A number, or empty when the key is absent. */
    public OptionalDouble optionalReal(String key) { return has(key) ? OptionalDouble.of(real(key)) : OptionalDouble.empty(); }

    /** A BOOL value. */
    public boolean bool(String key) { return get(key, Boolean.class, "BOOL"); }

    /** A BOOL value, or empty when the key is absent. */
    public Optional<Boolean> optionalBool(String key) { return has(key) ? Optional.of(bool(key)) : Optional.empty(); }

    /** An ARRAY value of any element type. */
    public List<?> array(String key) { return get(key, List.class, "ARRAY"); }

    /** An ARRAY of STRING. */
    @SuppressWarnings("unchecked")
    public List<String> strings(String key) {
        List<?> a = array(key);
        if (!typeName(key).equals("ARRAY of STRING")) throw wrongType(key, "ARRAY of STRING");
        return (List<String>) a;
    }

    /** An ARRAY of FLOAT32 as a {@code float[]} (exact; FLOAT64 arrays are refused rather than rounded). */
    public float[] floats(String key) {
        if (array(key) instanceof PackedList p && p.type() == ValueType.FLOAT32) return p.toFloatArray();
        throw wrongType(key, "ARRAY of FLOAT32");
    }

    /** An ARRAY of any integer type as a {@code long[]} (UINT64 as raw bits). */
    public long[] longs(String key) {
        if (array(key) instanceof PackedList p && p.type().isInteger()) return p.toLongArray();
        throw wrongType(key, "ARRAY of an integer type");
    }

    /** An ARRAY of an integer type whose values all fit an {@code int}, as an {@code int[]}. */
    public int[] ints(String key) {
        long[] l = longs(key);
        int[] out = new int[l.length];
        for (int i = 0; i < l.length; i++) {
            if (l[i] != (int) l[i] || (l[i] < 0 && typeName(key).contains("UINT64"))) {
                throw new ModelFileException(file, "metadata key '" + key + "' [" + i + "]: expected a value within int range, found "
                        + (typeName(key).contains("UINT64") ? Long.toUnsignedString(l[i]) : l[i]));
            }
            out[i] = (int) l[i];
        }
        return out;
    }

    private boolean has(String key) { return metadata().containsKey(key); }

    private Object require(String key) {
        Object v = metadata().get(key);
        if (v == null) throw new ModelFileException(file, "metadata key '" + key + "': expected in the file, not found");
        return v;
    }

    private <T> T get(String key, Class<T> type, String expected) {
        Object v = require(key);
        if (!type.isInstance(v)) throw wrongType(key, expected);
        return type.cast(v);
    }

    private String typeName(String key) { return parsed.metadata().types().get(key); }

    private ModelFileException wrongType(String key, String expected) {
        return new ModelFileException(file, "metadata key '" + key + "': expected " + expected + ", found " + typeName(key));
    }

    private static double unsignedToDouble(long bits) {
        return bits >= 0 ? bits : ((bits >>> 1) | (bits & 1)) * 2.0; // halve with a sticky bit, so rounding is correct
    }

    /** Unmaps the file. Tensor data read from it must not be used afterwards. Idempotent. */
    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) arena.close();
    }

    @Override
    public String toString() {
        return "GgufFile[" + file + ", v" + version() + ", " + metadata().size() + " keys, " + tensors().size() + " tensors]";
    }
}
