package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Shared input handling of the core-op golden groups (creation, elementwise, activations, reductions,
 * movement, linalg).
 *
 * <p>Non-contiguous inputs: the generator stores some inputs in a different layout and names them in
 * the args, so that the op sees a view rather than a dense buffer. {@code "tr": [i, ...]} means input
 * i is stored with its last two axes swapped and is transposed back ({@link Tensor#mT()});
 * {@code "st": [i, ...]} means input i is stored with a junk row after every row of axis 0 and is read
 * back with a step-2 slice.
 *
 * <p>Scalar operands: {@code "scalar"} replaces the second tensor operand of a binary op by a Java
 * {@link Long}, {@link Double} or {@link Boolean}.
 */
final class CoreGolden {
    private CoreGolden() {}

    /** The inputs with the views the case asks for applied. */
    static List<Tensor> inputs(List<Tensor> in, GoldenArgs a) {
        List<Tensor> out = new ArrayList<>(in);
        for (int i : a.ints("tr", new int[0])) out.set(i, out.get(i).mT());
        for (int i : a.ints("st", new int[0])) out.set(i, out.get(i).slice(0, 0, Integer.MAX_VALUE, 2));
        return out;
    }

    /** A Java scalar argument: Boolean for JSON booleans, Long for integral numbers, Double otherwise. */
    static Object scalar(GoldenArgs a, String key) {
        return a.node().get(key).isBoolean() ? (Object) a.b(key) : a.number(key);
    }

    /** The second operand of a binary op: the scalar argument if there is one, else input 1. */
    static Object other(List<Tensor> x, GoldenArgs a) {
        return a.has("scalar") ? scalar(a, "scalar") : x.get(1);
    }

    /** A unary op on input 0. */
    static GoldenOp unary(Function<Tensor, Tensor> f) {
        return GoldenOp.one((in, a) -> f.apply(inputs(in, a).get(0)));
    }

    /** A binary op on input 0 and {@link #other}. */
    static GoldenOp binary(BiFunction<Tensor, Object, Tensor> f) {
        return GoldenOp.one((in, a) -> {
            List<Tensor> x = inputs(in, a);
            return f.apply(x.get(0), other(x, a));
        });
    }

    /** The axes argument, empty (all axes) when absent. */
    static int[] axes(GoldenArgs a) { return a.ints("axes", new int[0]); }
}
