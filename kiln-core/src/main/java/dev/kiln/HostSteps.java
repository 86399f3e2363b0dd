package dev.kiln;

import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Device;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Host code as steps of a graph ({@link Tensor#custom}, {@link Tensor#host}, {@link Tensor#hostSized}): one
 * {@link Op#CUSTOM} node over the inputs, placed on the first input's device.
 */
final class HostSteps {
    private HostSteps() {}

    static Tensor custom(String name, DType dtype, Shape shape, CustomFunction.Body body, Tensor... inputs) {
        Objects.requireNonNull(body, "body");
        Tensor.checkComputable("custom", dtype);
        var fn = new CustomFunction(name, shape, body);
        Device d = inputs.length > 0 ? inputs[0].device() : Tensor.defaultDevice();
        List<UOp> src = Arrays.stream(inputs).map(t -> t.to(d).node()).toList();
        return new Tensor(UOp.of(Op.CUSTOM, dtype, fn, src), d);
    }

    /**
     * {@link Tensor#hostSized}: the capacity shape with {@code axis} made symbolic by {@code extent}, whose range must
     * start at 0 or more and end at the capacity (the size the output is laid out at), and whose value the step gives.
     * An input with symbolic axes is read at its maximum layout, as every host step reads it: a step that needs its size
     * takes {@link Tensor#variable} of each axis as an input of its own.
     */
    static Tensor sized(String name, DType dtype, int[] capacity, int axis, Variable extent, SizedHostFunction fn, Tensor... inputs) {
        Objects.requireNonNull(fn, "fn");
        Objects.requireNonNull(extent, "extent");
        Shape s = Shape.of(capacity);
        if (axis < 0 || axis >= s.rank()) throw new IllegalArgumentException("hostSized " + name + ": axis " + axis + " out of range for shape " + s);
        if (extent.max() != s.dim(axis) || extent.min() < 0) {
            throw new IllegalArgumentException("hostSized " + name + ": variable '" + extent.name() + "' [" + extent.min() + ", " + extent.max()
                    + "] must range from 0 or more up to the capacity " + s.dim(axis) + " of axis " + axis + " of " + s);
        }
        CustomFunction.Sized body = fn::apply;
        return custom(name, dtype, s.withVariable(axis, extent), body, inputs);
    }
}
