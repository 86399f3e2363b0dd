package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

/** Golden cases of attention, rotary embeddings and interpolation (tools/golden/gen_attention.py). */
class AttentionGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "attention"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.of(
                "scaled_dot_product_attention", GoldenOp.one((raw, a) -> {
                    List<Tensor> in = NormsGoldenTest.untransposed(raw, a);
                    Tensor mask = a.b("mask") ? in.get(3) : null;
                    Double scale = a.has("scale") ? a.d("scale") : null;
                    return Tensor.scaledDotProductAttention(in.get(0), in.get(1), in.get(2), mask, a.b("causal"), scale);
                }),
                "rotary_embedding", GoldenOp.one((raw, a) -> {
                    List<Tensor> in = NormsGoldenTest.untransposed(raw, a);
                    return in.get(0).rotaryEmbedding(in.get(1), in.get(2), a.b("interleaved"));
                }),
                "rotary_tables", (in, a) -> {
                    Tensor.RotaryTables t = Tensor.rotaryTables(a.i("seq_len"), a.i("dim"), a.d("base"));
                    return List.of(t.cos(), t.sin());
                },
                "interpolate_nearest", GoldenOp.one((raw, a) ->
                        NormsGoldenTest.untransposed(raw, a).get(0).interpolate(a.ints("size"), "nearest", a.b("align_corners"))),
                "interpolate_linear", GoldenOp.one((raw, a) ->
                        NormsGoldenTest.untransposed(raw, a).get(0).interpolate(a.ints("size"), "linear", a.b("align_corners"))));
    }
}
