package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.function.BinaryOperator;
import java.util.function.UnaryOperator;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Elementwise operators: arithmetic, comparisons, logic, activations, casts. */
final class ElementwiseOps {
    private ElementwiseOps() {}

    static void register() {
        unary("Abs", Tensor::abs);
        unary("Neg", Tensor::neg);
        unary("Reciprocal", Tensor::reciprocal);
        unary("Sqrt", Tensor::sqrt);
        unary("Exp", Tensor::exp);
        unary("Log", Tensor::log);
        unary("Sin", Tensor::sin);
        unary("Cos", Tensor::cos);
        unary("Tan", Tensor::tan);
        unary("Asin", Tensor::asin);
        unary("Acos", Tensor::acos);
        unary("Atan", Tensor::atan);
        unary("Sinh", Tensor::sinh);
        unary("Cosh", Tensor::cosh);
        unary("Asinh", Tensor::asinh);
        unary("Acosh", Tensor::acosh);
        unary("Atanh", Tensor::atanh);
        unary("Tanh", Tensor::tanh);
        unary("Sigmoid", Tensor::sigmoid);
        unary("Erf", Tensor::erf);
        unary("Floor", Tensor::floor);
        unary("Ceil", Tensor::ceil);
        unary("Round", Tensor::round);
        unary("Sign", Tensor::sign);
        unary("Softsign", Tensor::softsign);
        unary("Softplus", Tensor::softplus);
        unary("IsNaN", Tensor::isnan);
        unary("Not", Tensor::logicalNot);
        unary("Relu", Tensor::relu);
        unary("HardSwish", Tensor::hardswish);
        add("Identity", 1, c -> one(c.in(0)));
        add("IsInf", 10, c -> one(c.in(0).isinf(c.a.b("detect_positive", true), c.a.b("detect_negative", true))));
        add("LeakyRelu", 6, c -> one(c.in(0).leakyRelu(c.a.f("alpha", 0.01))));
        add("Elu", 6, c -> one(c.in(0).elu(c.a.f("alpha", 1.0))));
        add("Celu", 12, c -> one(c.in(0).celu(c.a.f("alpha", 1.0))));
        add("Selu", 6, c -> one(c.in(0).elu(c.a.f("alpha", 1.67326319217681884765625)).mul(c.a.f("gamma", 1.05070102214813232421875))));
        add("ThresholdedRelu", 10, c -> one(c.in(0).thresholdedRelu(c.a.f("alpha", 1.0))));
        add("HardSigmoid", 6, c -> one(c.in(0).hardSigmoid(c.a.f("alpha", 0.2), c.a.f("beta", 0.5))));
        add("PRelu", 7, c -> {
            Tensor x = c.in(0);
            return one(Tensor.where(x.lt(0), x.mul(c.in(1)).cast(x.dtype()), x));
        });
        add("Shrink", 9, c -> one(c.in(0).shrink(c.a.f("lambd", 0.5), c.a.f("bias", 0.0))));

        binary("Add", Tensor::add);
        binary("Sub", Tensor::sub);
        binary("Mul", Tensor::mul);
        binary("Div", (a, b) -> a.dtype().isFloat() ? a.div(b) : a.truncDiv(b));
        binary("And", Tensor::logicalAnd);
        binary("Or", Tensor::logicalOr);
        binary("Xor", Tensor::logicalXor);
        binary("Equal", Tensor::eq);
        binary("Greater", Tensor::gt);
        binary("Less", Tensor::lt);
        binary("GreaterOrEqual", Tensor::ge);
        binary("LessOrEqual", Tensor::le);
        add("Pow", 1, c -> {
            Tensor[] ab = operands(c);
            Tensor x = ab[0], y = ab[1];
            if (x.dtype().isFloat()) return one(x.pow(y.cast(x.dtype())));
            // an integer base keeps its dtype (ONNX Pow's output is the base's type)
            return one(x.cast(DType.F64).pow(y.cast(DType.F64)).cast(x.dtype()));
        });
        add("Mod", 10, c -> {
            Tensor[] ab = operands(c);
            boolean fmod = c.a.b("fmod", false);
            return one(fmod ? ab[0].fmod(ab[1]) : ab[0].mod(ab[1]));
        });
        add("BitShift", 11, c -> {
            String dir = c.a.s("direction", "");
            Tensor x = c.in(0), y = c.in(1);
            return one(dir.equals("LEFT") ? x.shl(y) : x.shr(y));
        }, (n, opset) -> switch (n.attrs().s("direction", "")) {
            case "LEFT", "RIGHT" -> null;
            default -> "direction must be LEFT or RIGHT, got '" + n.attrs().s("direction", "") + "'";
        });

        variadic("Sum", Tensor::add);
        variadic("Max", Tensor::maximum);
        variadic("Min", Tensor::minimum);
        add("Mean", 1, c -> {
            Tensor acc = c.in(0);
            for (int i = 1; i < c.inputCount(); i++) acc = acc.add(c.in(i));
            return one(acc.div((double) c.inputCount()).cast(acc.dtype()));
        });

        add("Where", 9, c -> {
            // Tensor.where converts any condition to bool; ONNX types it bool, and a float mask here is a model error
            if (c.in(0).dtype() != DType.BOOL) throw c.bad("condition must be bool, got " + c.in(0).dtype() + " " + c.in(0).shape());
            return one(Tensor.where(c.in(0), c.in(1), c.in(2)));
        });
        add("Clip", 1, c -> {
            Tensor x = c.in(0);
            if (c.opset < 11) {
                Double lo = c.a.has("min") ? c.a.f("min", 0) : null, hi = c.a.has("max") ? c.a.f("max", 0) : null;
                return one(x.clamp(lo, hi).cast(x.dtype()));
            }
            Tensor lo = c.opt(1), hi = c.opt(2);
            if (lo != null) x = x.maximum(lo.cast(x.dtype()));
            if (hi != null) x = x.minimum(hi.cast(x.dtype()));
            return one(x);
        });
        add("Cast", 6, c -> one(c.in(0).cast(TensorProtos.dtype(c.a.int32("to", 0), "Cast target"))), (n, opset) -> castTarget(n.attrs().i("to", 0)));
        add("CastLike", 15, c -> one(c.in(0).cast(c.in(1).dtype())));
    }

    /** Null if {@code code} is a dtype Kiln has, else the reason. */
    static String castTarget(long code) {
        if (code == onnx.Onnx.TensorProto.DataType.STRING_VALUE) return null; // StringOps casts to strings
        try {
            TensorProtos.dtype((int) code, "Cast target");
            return null;
        } catch (UnsupportedOnnxOpException e) {
            return "cast to " + TensorProtos.typeName((int) code) + " is not supported (no Kiln dtype)";
        }
    }

    private static void unary(String op, UnaryOperator<Tensor> f) { add(op, 1, c -> one(f.apply(c.in(0)))); }

    private static void binary(String op, BinaryOperator<Tensor> f) {
        add(op, 1, c -> {
            Tensor[] ab = operands(c);
            return one(f.apply(ab[0], ab[1]));
        });
    }

    private static void variadic(String op, BinaryOperator<Tensor> f) {
        add(op, 1, c -> {
            Tensor acc = c.in(0);
            for (int i = 1; i < c.inputCount(); i++) acc = f.apply(acc, c.in(i));
            return one(acc);
        });
    }

    /**
     * The two operands of a binary operator. Opsets before 7 broadcast only when the {@code broadcast}
     * attribute says so, aligning the second operand's axes at {@code axis} of the first (default: its
     * trailing axes, which NumPy broadcasting also does).
     */
    static Tensor[] operands(OpContext c) {
        Tensor a = c.in(0), b = c.in(1);
        if (c.opset < 7) {
            if (c.a.b("broadcast", false)) {
                if (c.a.has("axis") && b.ndim() < a.ndim()) {
                    int axis = c.axis(c.a.i("axis", 0), a.ndim(), "axis");
                    int[] d = new int[a.ndim() - axis];
                    java.util.Arrays.fill(d, 1);
                    System.arraycopy(b.dims(), 0, d, 0, b.ndim());
                    b = b.reshape(d);
                }
            } else if (!a.shape().equals(b.shape())) {
                throw c.bad("shapes " + a.shape() + " and " + b.shape() + " differ and the broadcast attribute is not set (opset " + c.opset + ")");
            }
        }
        return new Tensor[] {a, b};
    }
}
