package dev.kiln.onnx;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.runtime.MemoryBudgetException;
import onnx.Onnx.TensorProto;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads ONNX {@code TensorProto} values (a {@code .pb} file of the ONNX test layout, or an initializer) into
 * realised tensors on the default device. Every numeric dtype Kiln has is read, from {@code raw_data} or from
 * the typed fields; strings, complex numbers, 8- and 4-bit floats and externally stored data raise
 * {@link UnsupportedOnnxOpException}.
 */
public final class TensorProtos {
    private TensorProtos() {}

    /**
     * The tensor stored in a TensorProto file.
     *
     * @throws OnnxFormatException if the file cannot be read or is not a valid TensorProto
     * @throws UnsupportedOnnxOpException if its element type has no Kiln dtype
     */
    public static Tensor read(Path file) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new OnnxFormatException(file.toString(), "cannot read the file (" + e + ")", e);
        }
        TensorProto p;
        try {
            p = TensorProto.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new OnnxFormatException(file.toString(), "not a valid TensorProto (" + e.getMessage() + ")", e);
        }
        return toTensor(p, file.toString());
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

    /** A TensorProto as a realised tensor; {@code source} names it in errors. */
    static Tensor toTensor(TensorProto p, String source) {
        String what = p.getName().isEmpty() ? source : source + " (tensor " + p.getName() + ")";
        if (p.getDataLocation() == TensorProto.DataLocation.EXTERNAL || p.getExternalDataCount() > 0) {
            throw new UnsupportedOnnxOpException(what, "tensor data stored in an external file is not supported");
        }
        if (p.hasSegment()) throw new UnsupportedOnnxOpException(what, "segmented tensor data is not supported");
        DType dt = dtype(p.getDataType(), what);
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
        int count = (int) n;
        // the bytes the file really holds are checked before allocating: a tiny file must not claim gigabytes
        if (p.hasRawData()) checkRaw(p.getRawData(), dt, count, what);
        else checkTyped(p, dt, count, what);
        try {
            // read into a staging segment, then copied onto the device: both are held at once
            MemoryBudget.check(2 * dt.byteSize(count), count + " elements of " + dt + " (staged, then copied to the device)");
        } catch (MemoryBudgetException e) {
            throw new OnnxFormatException(what, e.getMessage(), e);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(Math.max(1, dt.byteSize(count)), 8);
            if (p.hasRawData()) readRaw(p.getRawData(), dt, count, seg);
            else readTyped(p, dt, count, new Buffer("CPU", dt, count, seg));
            return Tensor.fromSegment(seg, dt, shape);
        } catch (IllegalArgumentException e) {
            // a shape Kiln's tensors refuse (an empty tensor whose other axes span too much)
            throw new OnnxFormatException(what, "dims " + p.getDimsList() + ": " + e.getMessage(), e);
        }
    }

    private static void checkRaw(ByteString raw, DType dt, int count, String what) {
        long need = dt.byteSize(count);
        if (raw.size() != need) {
            throw new OnnxFormatException(what, "raw_data has " + raw.size() + " bytes, " + count + " elements of " + dt + " need " + need);
        }
    }

    private static void readRaw(ByteString raw, DType dt, int count, MemorySegment seg) {
        MemorySegment.copy(MemorySegment.ofBuffer(raw.asReadOnlyByteBuffer()), 0, seg, 0, raw.size());
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
