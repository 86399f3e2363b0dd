package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

import static dev.kiln.golden.CoreGolden.inputs;
import static dev.kiln.golden.CoreGolden.unary;
import static java.util.Map.entry;

/** Activation functions, softmax and logSoftmax (tools/golden/gen_activations.py). */
class ActivationsGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "activations"; }

    /** An op on input 0 that reads its parameters from the args. */
    private static GoldenOp withArgs(BiFunction<Tensor, GoldenArgs, Tensor> f) {
        return GoldenOp.one((in, a) -> f.apply(inputs(in, a).get(0), a));
    }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("relu", unary(Tensor::relu)),
                entry("relu6", unary(Tensor::relu6)),
                entry("leakyRelu", withArgs((x, a) -> x.leakyRelu(a.d("slope")))),
                entry("prelu", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    return x.get(0).prelu(x.get(1));
                })),
                entry("elu", withArgs((x, a) -> x.elu(a.d("alpha")))),
                entry("selu", unary(Tensor::selu)),
                entry("celu", withArgs((x, a) -> x.celu(a.d("alpha")))),
                entry("gelu", unary(Tensor::gelu)),
                entry("geluTanh", unary(Tensor::geluTanh)),
                entry("sigmoid", unary(Tensor::sigmoid)),
                entry("logSigmoid", unary(Tensor::logSigmoid)),
                entry("silu", unary(Tensor::silu)),
                entry("mish", unary(Tensor::mish)),
                entry("softplus", withArgs((x, a) -> a.has("beta") ? x.softplus(a.d("beta"), a.d("threshold")) : x.softplus())),
                entry("softsign", unary(Tensor::softsign)),
                entry("hardsigmoid", unary(Tensor::hardsigmoid)),
                entry("hardswish", unary(Tensor::hardswish)),
                entry("hardtanh", withArgs((x, a) -> x.hardtanh(a.d("min"), a.d("max")))),
                entry("softmax", withArgs((x, a) -> x.softmax(a.i("axis")))),
                entry("logSoftmax", withArgs((x, a) -> x.logSoftmax(a.i("axis")))));
    }
}
