package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Golden cases of the normalisation layers and the embedding lookup (tools/golden/gen_norms.py). */
class NormsGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "norms"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.of(
                "batch_norm", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 3);
                    return p.x().batchNorm(in.get(1), in.get(2), p.weight(), p.bias(), a.d("eps"));
                }),
                "batch_norm_training", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 1);
                    return p.x().batchNormTraining(p.weight(), p.bias(), a.d("eps"));
                }),
                "layer_norm", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 1);
                    return p.x().layerNorm(a.ints("normalized_shape"), p.weight(), p.bias(), a.d("eps"));
                }),
                "group_norm", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 1);
                    return p.x().groupNorm(a.i("groups"), p.weight(), p.bias(), a.d("eps"));
                }),
                "instance_norm", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 1);
                    return p.x().instanceNorm(p.weight(), p.bias(), a.d("eps"));
                }),
                "rms_norm", GoldenOp.one((in, a) -> {
                    Params p = Params.of(in, a, 1);
                    return p.x().rmsNorm(a.ints("normalized_shape"), p.weight(), a.d("eps"));
                }),
                "embedding", GoldenOp.one((in, a) -> {
                    List<Tensor> t = untransposed(in, a);
                    return Tensor.embedding(t.get(0), t.get(1));
                }));
    }

    /** Inputs listed in arg "t" are stored with the last two axes swapped: swap them back (a non-contiguous view). */
    static List<Tensor> untransposed(List<Tensor> in, GoldenArgs a) {
        List<Tensor> out = new ArrayList<>(in);
        for (int i : a.ints("t", new int[0])) out.set(i, in.get(i).transpose(-1, -2));
        return out;
    }

    /** The input x and the optional weight and bias that follow the {@code first} positional inputs. */
    private record Params(Tensor x, Tensor weight, Tensor bias) {
        static Params of(List<Tensor> raw, GoldenArgs a, int first) {
            List<Tensor> in = untransposed(raw, a);
            int next = first;
            Tensor w = a.b("weight", false) ? in.get(next++) : null;
            Tensor b = a.b("bias", false) ? in.get(next) : null;
            return new Params(in.get(0), w, b);
        }
    }
}
