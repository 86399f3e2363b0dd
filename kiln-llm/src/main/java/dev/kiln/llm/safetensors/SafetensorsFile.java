package dev.kiln.llm.safetensors;

import dev.kiln.llm.ModelFileException;
import dev.kiln.llm.mapping.MappedFiles;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A safetensors file, memory-mapped through FFM and read in place: the JSON header is parsed (with Jackson) and
 * checked against the data when the file is opened, the tensors' data is never copied onto the heap. Tensors of
 * F32, F16 and BF16 are supported; any other dtype, a header that does not fit the file, offsets out of range,
 * unordered, overlapping or of the wrong size for the shape get a {@link ModelFileException} naming the file, the
 * tensor and the field.
 *
 * <p>The file stays mapped until {@link #close()}; tensors' {@link SafetensorsTensor#data()} and tensors wrapped from
 * it by {@link SafetensorsTensor#toTensor()} must not be used after that. The mapping may be read from any thread.
 */
public final class SafetensorsFile implements AutoCloseable {
    private final Path file;
    private final Arena arena;
    private final SafetensorsHeader.Parsed parsed;
    private final Map<String, SafetensorsTensor> byName = new LinkedHashMap<>();

    private SafetensorsFile(Path file, Arena arena, SafetensorsHeader.Parsed parsed) {
        this.file = file;
        this.arena = arena;
        this.parsed = parsed;
        for (SafetensorsTensor t : parsed.tensors()) byName.put(t.name(), t);
    }

    /**
     * Maps and parses {@code file}.
     *
     * @throws ModelFileException if the file cannot be read or is not a valid safetensors file of supported dtypes
     */
    public static SafetensorsFile open(Path file) {
        return MappedFiles.open(file, (arena, data) -> new SafetensorsFile(file, arena, SafetensorsHeader.parse(data, file)));
    }

    /** Parses safetensors bytes already in memory (tests, fuzzing); {@code name} is used in errors. */
    static SafetensorsFile parse(MemorySegment data, Path name) {
        return new SafetensorsFile(name, null, SafetensorsHeader.parse(data, name));
    }

    /** The file's path. */
    public Path file() { return file; }

    /** The header's {@code __metadata__} (string to string, in file order), empty when absent. Unmodifiable. */
    public Map<String, String> metadata() { return parsed.metadata(); }

    /** The file offset where the data section starts: 8 plus the header's length. */
    public long dataOffset() { return parsed.dataOffset(); }

    /** The tensors in header order. Unmodifiable. */
    public List<SafetensorsTensor> tensors() { return parsed.tensors(); }

    /** The tensor named {@code name}, or empty. */
    public Optional<SafetensorsTensor> findTensor(String name) { return Optional.ofNullable(byName.get(name)); }

    /**
     * The tensor named {@code name}.
     *
     * @throws ModelFileException if the file has none by that name
     */
    public SafetensorsTensor tensor(String name) {
        SafetensorsTensor t = byName.get(name);
        if (t == null) throw new ModelFileException(file, "tensor '" + name + "': expected in the file, not found among its " + byName.size() + " tensors");
        return t;
    }

    /** Unmaps the file. Tensor data read from it must not be used afterwards. Idempotent. */
    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) arena.close();
    }

    @Override
    public String toString() { return "SafetensorsFile[" + file + ", " + tensors().size() + " tensors]"; }
}
