package dev.kiln.onnx;

import com.google.protobuf.ByteString;
import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.runtime.MemoryBudgetException;
import onnx.Onnx.TensorProto;

import dev.kiln.onnx.ExternalData.Reference;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads ONNX {@code TensorProto} values (a {@code .pb} file of the ONNX test layout, or an initializer) into
 * realised tensors on the default device. Every numeric dtype Kiln has is read, from {@code raw_data}, from the
 * typed fields or from an external data file ({@link ExternalData}: mapped, and used in place when the layout
 * allows); strings, complex numbers, 8- and 4-bit floats and segmented tensors raise {@link UnsupportedOnnxOpException}.
 */
public final class TensorProtos {
    private TensorProtos() {}

    private static final System.Logger LOG = System.getLogger(TensorProtos.class.getName());
    private static final Set<String> LOGGED = ConcurrentHashMap.newKeySet();

    /**
     * The tensor stored in a TensorProto file. Data it keeps in an external file is read relative to the file's
     * directory and stays mapped for as long as the tensor is reachable.
     *
     * @throws OnnxFormatException if the file cannot be read, is not a valid TensorProto, or its external data is refused
     * @throws UnsupportedOnnxOpException if its element type has no Kiln dtype
     */
    public static Tensor read(Path file) {
        TensorProto p = ProtoFiles.parse(file, "TensorProto", "store the data in an external file (ONNX external data)", TensorProto::parseFrom);
        Path dir = file.toAbsolutePath().getParent();
        return toTensor(p, file.toString(), dir == null ? ExternalData.unavailable() : ExternalData.collected(dir));
    }

    /** The Kiln dtype of an ONNX {@code TensorProto.DataType} code, for the value {@code what}. */
    static DType dtype(int code, String what) {
        return switch (code) {
            case 1 -> DType.F32;
            case 2 -> DType.U8;
            case 3 -> DType.I8;
            case 4 -> DType.U16;
            case 5 -> DType.I16;
            case 6 -> DType.I32;
            case 7 -> DType.I64;
            case 9 -> DType.BOOL;
            case 10 -> DType.F16;
            case 11 -> DType.F64;
            case 12 -> DType.U32;
            case 13 -> DType.U64;
            case 16 -> DType.BF16;
            default -> throw new UnsupportedOnnxOpException(what, "element type " + typeName(code) + " has no Kiln dtype");
        };
    }

    /** The ONNX {@code TensorProto.DataType} code of a Kiln dtype. */
    static int code(DType dtype) {
        return switch (dtype) {
            case F32 -> 1;
            case U8 -> 2;
            case I8 -> 3;
            case U16 -> 4;
            case I16 -> 5;
            case I32 -> 6;
            case I64 -> 7;
            case BOOL -> 9;
            case F16 -> 10;
            case F64 -> 11;
            case U32 -> 12;
            case U64 -> 13;
            case BF16 -> 16;
            default -> throw new IllegalArgumentException("dtype " + dtype + " has no ONNX element type");
        };
    }

    /** The ONNX name of an element type code (for messages). */
    static String typeName(int code) {
        TensorProto.DataType t = TensorProto.DataType.forNumber(code);
        return t == null ? "code " + code : t.name();
    }

    /** The dtype, dims and element count a TensorProto declares, checked; {@code what} names it in errors. */
    private record Header(DType dtype, int[] shape, int count, String what) {
        static Header of(TensorProto p, String source) {
            String what = p.getName().isEmpty() ? source : source + " (tensor " + p.getName() + ")";
            if (p.hasSegment()) throw new UnsupportedOnnxOpException(what, "segmented tensor data is not supported");
            DType dt = TensorProtos.dtype(p.getDataType(), what);
            int[] shape = new int[p.getDimsCount()];
            long n = 1;
            for (int i = 0; i < shape.length; i++) {
                long d = p.getDims(i);
                if (d < 0) throw new OnnxFormatException(what, "dimension " + i + " is " + d + ", expected a size of at least 0");
                if (d > Integer.MAX_VALUE) throw new OnnxFormatException(what, "dimension " + i + " is " + d + ", over Kiln's limit of 2^31 - 1");
                shape[i] = (int) d;
                try {
                    n = Math.multiplyExact(n, d);
                } catch (ArithmeticException overflow) {
                    throw new OnnxFormatException(what, "dims " + p.getDimsList() + " overflow 64 bits when multiplied");
                }
            }
            // an element count is checked after all dims, so that a zero dim anywhere makes an empty tensor
            if (n > Integer.MAX_VALUE) throw new OnnxFormatException(what, "dims " + p.getDimsList() + " hold " + n + " elements, over Kiln's limit of 2^31 - 1 per tensor");
            return new Header(dt, shape, (int) n, what);
        }

        long bytes() { return dtype.byteSize(count); }

        String needs() { return count + " elements of " + dtype; }
    }

    /**
     * A TensorProto as a realised tensor; {@code source} names it in errors, {@code external} resolves data stored
     * outside the model file.
     */
    static Tensor toTensor(TensorProto p, String source, ExternalData external) {
        Header h = Header.of(p, source);
        try {
            return isExternal(p) ? external(p, h, external) : inline(p, h);
        } catch (IllegalArgumentException e) {
            if (e instanceof OnnxFormatException || e instanceof UnsupportedOnnxOpException) throw e;
            // a shape Kiln's tensors refuse (an empty tensor whose other axes span too much)
            throw new OnnxFormatException(h.what(), "dims " + p.getDimsList() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Checks the external data of {@code p} as {@link #toTensor} would, without making a tensor: so that a tensor
     * attribute, converted only when its node is built, is refused when the model is loaded.
     */
    static void checkExternal(TensorProto p, String source, ExternalData external) {
        if (!isExternal(p)) return;
        Header h = Header.of(p, source);
        checkNothingInline(p, h);
        external.bytes(p, h.bytes(), h.needs(), h.what());
    }

    /** Whether the data is in an external file; ONNX reads {@code external_data} only then. */
    static boolean isExternal(TensorProto p) { return p.getDataLocation() == TensorProto.DataLocation.EXTERNAL; }

    private static Tensor inline(TensorProto p, Header h) {
        // the bytes the file really holds are checked before allocating: a tiny file must not claim gigabytes
        if (p.hasRawData()) checkRaw(p.getRawData(), h.dtype(), h.count(), h.what());
        else checkTyped(p, h.dtype(), h.count(), h.what());
        return staged(h, seg -> {
            if (p.hasRawData()) readRaw(p.getRawData(), h.dtype(), h.count(), seg);
            else readTyped(p, h.dtype(), h.count(), new Buffer("CPU", h.dtype(), h.count(), seg));
        });
    }

    /**
     * Data from an external file: the mapped bytes themselves when the default device keeps its tensors in host
     * memory and the bytes are already laid out as its tensors are (little-endian, each element at an address that
     * is a multiple of its size); otherwise a copy, said once per file.
     */
    private static Tensor external(TensorProto p, Header h, ExternalData external) {
        checkNothingInline(p, h);
        MemorySegment bytes = external.bytes(p, h.bytes(), h.needs(), h.what());
        if (h.count() == 0) return Tensor.fromSegment(bytes, h.dtype(), h.shape()); // nothing to map or copy
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            logOnce(Reference.of(p, h.what()).location(), "big-endian", "this machine is big-endian and ONNX data is little-endian, so each tensor is copied and its bytes swapped");
            return staged(h, seg -> readRaw(bytes, h.dtype(), h.count(), seg));
        }
        if (Tensor.defaultDevice().deviceMemory().isPresent()) {
            // a device with its own memory (a GPU) needs the data there in any case; its memory, not the budget, bounds it
            return Tensor.fromSegment(bytes, h.dtype(), h.shape());
        }
        if (bytes.address() % h.dtype().itemSize() != 0) {
            logOnce(Reference.of(p, h.what()).location(), "misaligned", "tensors at offsets that are not a multiple of their element size are copied"
                    + " (the first is " + h.what() + "); native kernels need each element at its natural alignment");
            checkBudget(h, 1, "copied from the mapped file, being misaligned");
            return Tensor.fromSegment(bytes, h.dtype(), h.shape());
        }
        return Tensor.wrapConstant(bytes, h.dtype(), h.shape());
    }

    private static void checkNothingInline(TensorProto p, Header h) {
        if (p.hasRawData() || typedCount(p) > 0) {
            throw new OnnxFormatException(h.what(), "data_location is EXTERNAL but the tensor holds data inline too (raw_data or a typed field);"
                    + " ONNX allows one or the other");
        }
    }

    private static int typedCount(TensorProto p) {
        return p.getFloatDataCount() + p.getDoubleDataCount() + p.getInt32DataCount() + p.getInt64DataCount() + p.getUint64DataCount()
                + p.getStringDataCount();
    }

    /** Logs a copy path taken for {@code location}'s tensors, once per file and {@code kind} in this process. */
    private static void logOnce(String location, String kind, String message) {
        if (LOGGED.add(location + "\0" + kind)) LOG.log(System.Logger.Level.INFO, "ONNX external data '" + location + "': " + message);
    }

    private interface Fill { void into(MemorySegment staging); }

    /** A tensor filled in a host staging segment, then copied onto the default device: both are held at once. */
    private static Tensor staged(Header h, Fill fill) {
        checkBudget(h, 2, "staged, then copied to the device");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(Math.max(1, h.bytes()), 8);
            fill.into(seg);
            return Tensor.fromSegment(seg, h.dtype(), h.shape());
        }
    }

    private static void checkBudget(Header h, int copies, String how) {
        try {
            MemoryBudget.check(copies * h.bytes(), h.needs() + " (" + how + ")");
        } catch (MemoryBudgetException e) {
            throw new OnnxFormatException(h.what(), e.getMessage(), e);
        }
    }

    private static void checkRaw(ByteString raw, DType dt, int count, String what) {
        long need = dt.byteSize(count);
        if (raw.size() != need) {
            throw new OnnxFormatException(what, "raw_data has " + raw.size() + " bytes, " + count + " elements of " + dt + " need " + need);
        }
    }

    private static void readRaw(ByteString raw, DType dt, int count, MemorySegment seg) {
        readRaw(MemorySegment.ofBuffer(raw.asReadOnlyByteBuffer()), dt, count, seg);
    }

    /** ONNX's little-endian bytes into {@code seg}, in native order. */
    private static void readRaw(MemorySegment raw, DType dt, int count, MemorySegment seg) {
        MemorySegment.copy(raw, 0, seg, 0, raw.byteSize());
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) swapBytes(seg, dt.itemSize(), count);
    }

    private static void swapBytes(MemorySegment seg, int size, int count) {
        for (long i = 0; i < count; i++) {
            for (int a = 0, b = size - 1; a < b; a++, b--) {
                byte x = seg.get(ValueLayout.JAVA_BYTE, i * size + a);
                seg.set(ValueLayout.JAVA_BYTE, i * size + a, seg.get(ValueLayout.JAVA_BYTE, i * size + b));
                seg.set(ValueLayout.JAVA_BYTE, i * size + b, x);
            }
        }
    }

    private static void checkTyped(TensorProto p, DType dt, int count, String what) {
        int have = switch (dt) {
            case F32 -> p.getFloatDataCount();
            case F64 -> p.getDoubleDataCount();
            case I64 -> p.getInt64DataCount();
            case U32, U64 -> p.getUint64DataCount();
            default -> p.getInt32DataCount(); // bool, 8/16/32-bit integers, f16 and bf16 as bit patterns
        };
        if (have != count) {
            throw new OnnxFormatException(what, "holds " + have + " values in its typed field, its shape needs " + count);
        }
    }

    private static void readTyped(TensorProto p, DType dt, int count, Buffer out) {
        for (int i = 0; i < count; i++) {
            switch (dt) {
                case F32 -> out.setDouble(i, p.getFloatData(i));
                case F64 -> out.setDouble(i, p.getDoubleData(i));
                case F16, BF16 -> out.segment().setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) p.getInt32Data(i));
                case I64 -> out.setLong(i, p.getInt64Data(i));
                case U32, U64 -> out.setLong(i, p.getUint64Data(i));
                default -> out.setLong(i, p.getInt32Data(i));
            }
        }
    }
}
