package dev.kiln.golden;

import dev.kiln.Tensor;
import dev.kiln.serve.moe.MixtureOfExperts;

import java.util.List;
import java.util.Map;

/** Golden cases of the mixture-of-experts layers (tools/golden/gen_moe.py). */
class MoeGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "moe"; }

    /** Input 0 stored transposed when the case says {@code "pre": "transpose"}: a non-contiguous x. */
    private static Tensor x(List<Tensor> in, GoldenArgs a) {
        return "transpose".equals(a.s("pre", "")) ? in.get(0).transpose(-1, -2) : in.get(0);
    }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.of(
                "mixture_of_experts", GoldenOp.one((in, a) ->
                        MixtureOfExperts.layer(x(in, a), in.get(1), in.get(2), in.get(3), in.get(4), a.i("k"), a.b("renormalize"))),
                "mixture_of_experts_mlp", GoldenOp.one((in, a) ->
                        MixtureOfExperts.mlpLayer(x(in, a), in.get(1), in.get(2), in.get(3), a.i("k"), a.b("renormalize"), a.s("activation"))));
    }
}
