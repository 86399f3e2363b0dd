package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import onnx.Onnx.TensorProto;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The rules between strings and numbers that ONNX's Cast follows (its reference implementation converts through NumPy):
 * a number written as NumPy writes it ({@code str(np.float32(x))}: the shortest digits that read back as the value in its
 * dtype, positional from 1e-4 to below 1e3 (f16, bf16), 1e6 (f32) or 1e16 (f64), else scientific as {@code 1e-05};
 * {@code nan}, {@code inf}), and a string read as a number of the target dtype, rounded once from its decimal digits.
 */
final class Strings {
    private Strings() {}

    /**
     * The string tensor {@code p} holds.
     *
     * @throws OnnxFormatException if it is not a STRING tensor or its strings do not fill its shape
     */
    static OnnxValue.StringValue value(TensorProto p, String source) {
        if (p.getDataType() != TensorProto.DataType.STRING_VALUE) {
            throw new OnnxFormatException(source, "a string tensor was expected, the file holds " + TensorProtos.typeName(p.getDataType()));
        }
        int[] dims = new int[p.getDimsCount()];
        for (int k = 0; k < dims.length; k++) {
            long d = p.getDims(k);
            if (d < 0 || d > Integer.MAX_VALUE) throw new OnnxFormatException(source, "dimension " + k + " is " + d);
            dims[k] = (int) d;
        }
        List<String> values = new ArrayList<>();
        for (var b : p.getStringDataList()) values.add(b.toString(StandardCharsets.UTF_8));
        Shape shape = Shape.of(dims);
        if (values.size() != shape.numel()) {
            throw new OnnxFormatException(source, "a string tensor of shape " + shape + " holds " + values.size() + " strings, expected " + shape.numel());
        }
        return new OnnxValue.StringValue(values, shape);
    }

    /** {@code v}, an element of dtype {@code dtype} read as a double (a float's value exactly), written as NumPy writes it. */
    static String format(double v, DType dtype) {
        if (dtype.isBool()) return v != 0 ? "True" : "False";
        if (!dtype.isFloat()) return Long.toString((long) v);
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        // Java's toString gives the shortest digits that read back as the value (JDK 19 on), in its own layout; halves are
        // searched for, digit by digit
        BigDecimal shortest = switch (dtype) {
            case F64 -> new BigDecimal(Double.toString(v));
            case F32 -> new BigDecimal(Float.toString((float) v));
            default -> shortestHalf(v, dtype);
        };
        double upper = dtype == DType.F64 ? 1e16 : dtype == DType.F32 ? 1e6 : 1e3;
        return numpyLayout(shortest, v, upper);
    }

    /** The fewest significant digits that read back as {@code v} in the 16-bit float {@code dtype}. */
    private static BigDecimal shortestHalf(double v, DType dtype) {
        BigDecimal exact = new BigDecimal(v);
        for (int p = 1; p < 17; p++) {
            BigDecimal d = exact.round(new java.math.MathContext(p, java.math.RoundingMode.HALF_EVEN));
            if (toHalf(d.doubleValue(), dtype) == v) return d;
        }
        return exact;
    }

    /** {@code d} rounded to f16 or bf16 (through f32, which holds every such value), as a double. */
    private static double toHalf(double d, DType dtype) {
        float f = (float) d;
        if (dtype == DType.F16) return Float.float16ToFloat(Float.floatToFloat16(f));
        int bits = Float.floatToRawIntBits(f);
        bits = (bits + 0x7FFF + ((bits >>> 16) & 1)) & 0xFFFF0000; // round to nearest even on the top 16 bits
        return Float.intBitsToFloat(bits);
    }

    /** A long element (an integer dtype's value, u64 as its bits) written as NumPy writes it. */
    static String format(long v, DType dtype) { return dtype == DType.U64 ? Long.toUnsignedString(v) : Long.toString(v); }

    private static String numpyLayout(BigDecimal digits, double v, double upper) {
        if (v == 0) return (1 / v < 0) ? "-0.0" : "0.0";
        BigDecimal d = digits.stripTrailingZeros();
        double abs = Math.abs(v);
        if (abs >= 1e-4 && abs < upper) {
            String plain = d.toPlainString();
            return plain.contains(".") ? plain : plain + ".0";
        }
        // scientific: d.ddd e±XX with at least two exponent digits, no trailing zeros in the mantissa
        String unscaled = d.unscaledValue().abs().toString();
        int exponent = unscaled.length() - 1 - d.scale();
        String mantissa = unscaled.length() == 1 ? unscaled : unscaled.charAt(0) + "." + unscaled.substring(1);
        return (d.signum() < 0 ? "-" : "") + mantissa + "e" + (exponent < 0 ? "-" : "+") + String.format(Locale.ROOT, "%02d", Math.abs(exponent));
    }

    /**
     * {@code s} read as a floating-point number, rounded once to {@code dtype} where it is F32 (else to double):
     * {@code nan}, {@code inf}, {@code infinity} in any case and sign are NumPy's spellings.
     *
     * @throws IllegalArgumentException if it is not a number
     */
    static double parseFloat(String s, DType dtype) {
        String t = s.strip();
        String lower = t.toLowerCase(Locale.ROOT);
        String unsigned = lower.startsWith("+") || lower.startsWith("-") ? lower.substring(1) : lower;
        boolean negative = lower.startsWith("-");
        if (unsigned.equals("nan")) return Double.NaN;
        if (unsigned.equals("inf") || unsigned.equals("infinity")) return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
        // Java also reads "1f", "0x1p3" and "Infinity": only plain decimal numbers are numbers here
        if (!t.matches("[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?")) throw new IllegalArgumentException("'" + s + "' is not a number");
        return dtype == DType.F32 ? Float.parseFloat(t) : Double.parseDouble(t);
    }

    /**
     * {@code s} read as an integer of {@code dtype} (u64 up to 2^64 - 1, as its bits).
     *
     * @throws IllegalArgumentException if it is not an integer
     */
    static long parseInteger(String s, DType dtype) {
        String t = s.strip();
        try {
            return dtype == DType.U64 ? Long.parseUnsignedLong(t.startsWith("+") ? t.substring(1) : t) : Long.parseLong(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' is not an integer of " + dtype);
        }
    }
}
