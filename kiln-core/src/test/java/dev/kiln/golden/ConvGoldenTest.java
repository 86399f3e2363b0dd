package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

/** Golden cases of convolution and transposed convolution (tools/golden/gen_conv.py). */
class ConvGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "conv"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                Map.entry("conv", GoldenOp.one((in, a) -> input(in, a).conv(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null),
                        a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv1d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).conv1d(in.get(1), bias(in))
                        : input(in, a).conv1d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv2d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).conv2d(in.get(1), bias(in))
                        : input(in, a).conv2d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv3d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).conv3d(in.get(1), bias(in))
                        : input(in, a).conv3d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv_transpose", GoldenOp.one((in, a) -> input(in, a).convTranspose(in.get(1), bias(in), a.ints("stride", null),
                        a.ints("padding", null), a.ints("outputPadding", null), a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv_transpose1d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).convTranspose1d(in.get(1), bias(in))
                        : input(in, a).convTranspose1d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("outputPadding", null),
                        a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv_transpose2d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).convTranspose2d(in.get(1), bias(in))
                        : input(in, a).convTranspose2d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("outputPadding", null),
                        a.ints("dilation", null), a.i("groups", 1)))),
                Map.entry("conv_transpose3d", GoldenOp.one((in, a) -> defaults(a) ? input(in, a).convTranspose3d(in.get(1), bias(in))
                        : input(in, a).convTranspose3d(in.get(1), bias(in), a.ints("stride", null), a.ints("padding", null), a.ints("outputPadding", null),
                        a.ints("dilation", null), a.i("groups", 1)))));
    }

    /** The input; "pre": "transpose" stores it with the last two axes swapped, so swapping back gives a non-contiguous view. */
    static Tensor input(List<Tensor> in, GoldenArgs a) {
        Tensor x = in.get(0);
        return a.s("pre", "").equals("transpose") ? x.transpose(-1, -2) : x;
    }

    private static Tensor bias(List<Tensor> in) { return in.size() > 2 ? in.get(2) : null; }

    /** No parameters given: the short overload. */
    private static boolean defaults(GoldenArgs a) {
        return !a.has("stride") && !a.has("padding") && !a.has("outputPadding") && !a.has("dilation") && !a.has("groups");
    }
}
