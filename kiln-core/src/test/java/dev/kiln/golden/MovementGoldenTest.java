package dev.kiln.golden;

import dev.kiln.Tensor;
import dev.kiln.Tensor.PadMode;

import java.util.Map;
import java.util.function.BiFunction;

import static dev.kiln.golden.CoreGolden.inputs;
import static java.util.Map.entry;

/** Movement ops: views, padding, joining and splitting (tools/golden/gen_movement.py). */
class MovementGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "movement"; }

    /** An op on input 0 that reads its parameters from the args. */
    private static GoldenOp withArgs(BiFunction<Tensor, GoldenArgs, Tensor> f) {
        return GoldenOp.one((in, a) -> f.apply(inputs(in, a).get(0), a));
    }

    private static GoldenOp pad(PadMode mode) {
        return withArgs((x, a) -> x.pad(a.intPairs("pads"), mode, a.d("value", 0)));
    }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("reshape", withArgs((x, a) -> x.reshape(a.ints("shape")))),
                entry("permute", withArgs((x, a) -> x.permute(a.ints("order")))),
                entry("transpose", withArgs((x, a) -> x.transpose(a.i("a"), a.i("b")))),
                entry("mT", withArgs((x, a) -> x.mT())),
                entry("expand", withArgs((x, a) -> x.expand(a.ints("shape")))),
                entry("squeeze", withArgs((x, a) -> a.has("axes") ? x.squeeze(a.ints("axes")) : x.squeeze())),
                entry("unsqueeze", withArgs((x, a) -> x.unsqueeze(a.i("axis")))),
                entry("flatten", withArgs((x, a) -> a.has("start") ? x.flatten(a.i("start"), a.i("end")) : x.flatten())),
                entry("flip", withArgs((x, a) -> x.flip(a.ints("axes")))),
                entry("slice", withArgs((x, a) -> x.slice(a.i("axis"), a.i("start"), a.i("end"), a.i("step")))),
                entry("pad", withArgs((x, a) -> x.pad(a.intPairs("pads")))),
                entry("pad_constant", pad(PadMode.CONSTANT)),
                entry("pad_reflect", pad(PadMode.REFLECT)),
                entry("pad_edge", pad(PadMode.EDGE)),
                entry("pad_circular", pad(PadMode.CIRCULAR)),
                entry("cat", GoldenOp.one((in, a) -> Tensor.cat(a.i("axis"), inputs(in, a).toArray(Tensor[]::new)))),
                entry("stack", GoldenOp.one((in, a) -> Tensor.stack(a.i("axis"), inputs(in, a).toArray(Tensor[]::new)))),
                entry("split", (in, a) -> inputs(in, a).get(0).split(a.i("size"), a.i("axis"))),
                entry("split_sizes", (in, a) -> inputs(in, a).get(0).split(a.ints("sizes"), a.i("axis"))),
                entry("chunk", (in, a) -> inputs(in, a).get(0).chunk(a.i("chunks"), a.i("axis"))),
                entry("repeat", withArgs((x, a) -> x.repeat(a.ints("repeats")))),
                entry("tile", withArgs((x, a) -> x.tile(a.ints("reps")))),
                entry("triu", withArgs((x, a) -> x.triu(a.i("k")))),
                entry("tril", withArgs((x, a) -> x.tril(a.i("k")))));
    }
}
