package dev.kiln.llm.safetensors;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One tensor of a {@link SafetensorsFile}: name, element type, row-major shape, and its data, a zero-copy slice of
 * the file's mapping that stays readable until the file is closed.
 *
 * @param file   the file it was read from, named in errors
 * @param name   the tensor's name, e.g. {@code model.layers.0.self_attn.q_proj.weight}
 * @param dtype  {@link DType#F32}, {@link DType#F16} or {@link DType#BF16}
 * @param shape  row-major dimensions (none for a scalar), each at least 0
 * @param begin  where the data starts, relative to the data section (the header's {@code data_offsets[0]})
 * @param end    where it ends ({@code data_offsets[1]})
 * @param data   the {@code end - begin} bytes, little-endian
 */
public record SafetensorsTensor(Path file, String name, DType dtype, int[] shape, long begin, long end, MemorySegment data) {
    private static final System.Logger LOG = System.getLogger(SafetensorsTensor.class.getName());
    private static final Set<Path> LOGGED = ConcurrentHashMap.newKeySet();

    public SafetensorsTensor {
        Objects.requireNonNull(file);
        Objects.requireNonNull(name);
        Objects.requireNonNull(data);
        shape = shape.clone();
        if (dtype != DType.F32 && dtype != DType.F16 && dtype != DType.BF16) throw new IllegalArgumentException(name + ": dtype " + dtype + " is not F32, F16 or BF16");
        long numel = 1;
        for (int d : shape) {
            if (d < 0) throw new IllegalArgumentException(name + ": negative dimension in " + Arrays.toString(shape));
            numel = Math.multiplyExact(numel, d);
        }
        if (begin < 0 || end - begin != Math.multiplyExact(numel, dtype.itemSize()) || data.byteSize() != end - begin) {
            throw new IllegalArgumentException(name + ": " + dtype + " " + Arrays.toString(shape) + " does not match data [" + begin + ", " + end
                    + ") of " + data.byteSize() + " bytes");
        }
    }

    /** Row-major dimensions. */
    @Override public int[] shape() { return shape.clone(); }

    /** The number of values. */
    public long numel() {
        long n = 1;
        for (int d : shape) n *= d; // checked in the constructor
        return n;
    }

    /** Bytes of data. */
    public long byteSize() { return end - begin; }

    /**
     * The tensor as a Kiln {@link Tensor} on the default device, wrapping the mapped data in place
     * ({@link Tensor#wrapConstant}, no copy): valid until the file is closed. Data that is not aligned to its element
     * size (a writer that does not pad the header to 8 bytes) is copied instead, and that is logged once per file; so
     * it is on a device with its own memory (a GPU).
     */
    public Tensor toTensor() {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) throw new UnsupportedOperationException("safetensors data is little-endian; this machine is not");
        if (Tensor.defaultDevice().deviceMemory().isPresent()) return Tensor.fromSegment(data, dtype, shape);
        if (data.address() % dtype.itemSize() != 0) {
            if (LOGGED.add(file)) {
                LOG.log(System.Logger.Level.INFO, file + ": tensor data not aligned to its elements (e.g. '" + name + "'); copying instead of mapping in place");
            }
            return Tensor.fromSegment(data, dtype, shape);
        }
        return Tensor.wrapConstant(data, dtype, shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SafetensorsTensor t && file.equals(t.file) && name.equals(t.name) && dtype == t.dtype && Arrays.equals(shape, t.shape)
                && begin == t.begin && end == t.end && data.equals(t.data);
    }

    @Override
    public int hashCode() { return Objects.hash(file, name, dtype, Arrays.hashCode(shape), begin, end); }

    @Override
    public String toString() { return "SafetensorsTensor[" + name + ", " + dtype + " " + Arrays.toString(shape) + ", [" + begin + ", " + end + ")]"; }
}
