package dev.kiln.golden;

import java.util.Map;

import static dev.kiln.golden.ConvGoldenTest.input;

/** Golden cases of max, average, power-average and global pooling (tools/golden/gen_pooling.py). */
class PoolingGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "pooling"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                Map.entry("max_pool1d", GoldenOp.one((in, a) -> full(a) ? input(in, a).maxPool1d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.ints("dilation", null), a.b("ceilMode")) : input(in, a).maxPool1d(a.ints("kernel")))),
                Map.entry("max_pool2d", GoldenOp.one((in, a) -> full(a) ? input(in, a).maxPool2d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.ints("dilation", null), a.b("ceilMode")) : input(in, a).maxPool2d(a.ints("kernel")))),
                Map.entry("max_pool3d", GoldenOp.one((in, a) -> full(a) ? input(in, a).maxPool3d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.ints("dilation", null), a.b("ceilMode")) : input(in, a).maxPool3d(a.ints("kernel")))),
                Map.entry("avg_pool1d", GoldenOp.one((in, a) -> full(a) ? input(in, a).avgPool1d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.b("ceilMode"), a.b("countIncludePad")) : input(in, a).avgPool1d(a.ints("kernel")))),
                Map.entry("avg_pool2d", GoldenOp.one((in, a) -> full(a) ? input(in, a).avgPool2d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.b("ceilMode"), a.b("countIncludePad")) : input(in, a).avgPool2d(a.ints("kernel")))),
                Map.entry("avg_pool3d", GoldenOp.one((in, a) -> full(a) ? input(in, a).avgPool3d(a.ints("kernel"), a.ints("stride", null),
                        a.ints("padding", null), a.b("ceilMode"), a.b("countIncludePad")) : input(in, a).avgPool3d(a.ints("kernel")))),
                Map.entry("lp_pool1d", GoldenOp.one((in, a) -> in.get(0).lpPool1d(a.d("p"), a.ints("kernel"), a.ints("stride", null), a.b("ceilMode")))),
                Map.entry("lp_pool2d", GoldenOp.one((in, a) -> in.get(0).lpPool2d(a.d("p"), a.ints("kernel"), a.ints("stride", null), a.b("ceilMode")))),
                Map.entry("global_avg_pool", GoldenOp.one((in, a) -> in.get(0).globalAvgPool())),
                Map.entry("global_max_pool", GoldenOp.one((in, a) -> in.get(0).globalMaxPool())));
    }

    /** Only a kernel given: the short overload (stride = kernel, no padding). */
    private static boolean full(GoldenArgs a) { return a.has("ceilMode"); }
}
