package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

/** Golden cases of gather, scatter, index select, take along axis, one-hot, sort, argsort and top-k. */
class IndexingGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "indexing"; }

    /** Input 0 as the op sees it: with "pre": "transpose", its last two axes swapped (non-contiguous). */
    private static Tensor x(List<Tensor> in, GoldenArgs a) {
        Tensor x = in.get(0);
        return a.s("pre", "").equals("transpose") ? x.mT() : x;
    }

    private static List<Tensor> both(Tensor.Sorted s) { return List.of(s.values(), s.indices()); }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                Map.entry("gather", GoldenOp.one((in, a) -> x(in, a).gather(a.i("axis"), in.get(1)))),
                Map.entry("scatter", GoldenOp.one((in, a) -> x(in, a).scatter(a.i("axis"), in.get(1), in.get(2)))),
                Map.entry("scatter_value", GoldenOp.one((in, a) -> x(in, a).scatter(a.i("axis"), in.get(1), a.number("value")))),
                Map.entry("scatter_add", GoldenOp.one((in, a) -> x(in, a).scatterAdd(a.i("axis"), in.get(1), in.get(2)))),
                Map.entry("index_select", GoldenOp.one((in, a) -> x(in, a).indexSelect(a.i("axis"), in.get(1)))),
                Map.entry("take_along_axis", GoldenOp.one((in, a) -> x(in, a).takeAlongAxis(in.get(1), a.i("axis")))),
                Map.entry("one_hot", GoldenOp.one((in, a) -> in.get(0).oneHot(a.i("num_classes")))),
                Map.entry("sort", (in, a) -> both(x(in, a).sort(a.i("axis"), a.b("descending")))),
                Map.entry("argsort", GoldenOp.one((in, a) -> x(in, a).argsort(a.i("axis"), a.b("descending")))),
                Map.entry("topk", (in, a) -> both(x(in, a).topk(a.i("k"), a.i("axis"), a.b("largest")))));
    }
}
