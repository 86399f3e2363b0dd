package dev.kiln.llm.chat;

import java.math.BigDecimal;

/** Python's {@code repr} of a float (shortest round-trip digits; exponent from 1e16, or below 1e-4). */
final class PythonRepr {
    private PythonRepr() {}

    static String ofDouble(double d) {
        if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
        BigDecimal v = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        double abs = Math.abs(d);
        if (abs >= 1e16 || abs < 1e-4) {
            String digits = v.unscaledValue().abs().toString();
            int exp = digits.length() - 1 - v.scale();
            String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            return (d < 0 ? "-" : "") + mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
        }
        String plain = v.toPlainString();
        return plain.contains(".") ? plain : plain + ".0";
    }
}
