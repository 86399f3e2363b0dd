package dev.kiln.golden;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.Map;

import static dev.kiln.golden.CoreGolden.inputs;
import static java.util.Map.entry;

/** Tensor creation, casts and bitcasts (tools/golden/gen_creation.py). */
class CreationGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "creation"; }

    private static DType dtype(GoldenArgs a) { return DType.parse(a.s("dtype")); }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("full", GoldenOp.one((in, a) -> Tensor.full(a.number("value"), dtype(a), a.ints("shape")))),
                entry("zeros", GoldenOp.one((in, a) -> a.has("dtype") ? Tensor.zeros(dtype(a), a.ints("shape")) : Tensor.zeros(a.ints("shape")))),
                entry("ones", GoldenOp.one((in, a) -> a.has("dtype") ? Tensor.ones(dtype(a), a.ints("shape")) : Tensor.ones(a.ints("shape")))),
                entry("scalar", GoldenOp.one((in, a) -> a.has("dtype") ? Tensor.scalar(a.number("value"), dtype(a)) : Tensor.scalar(a.d("value")))),
                entry("arange", GoldenOp.one((in, a) -> a.has("start")
                        ? Tensor.arange(a.i("start"), a.i("end"), a.i("step")) : Tensor.arange(a.i("end")))),
                entry("arange_float", GoldenOp.one((in, a) -> Tensor.arange(a.d("start"), a.d("end"), a.d("step")))),
                entry("linspace", GoldenOp.one((in, a) -> Tensor.linspace(a.d("start"), a.d("end"), a.i("steps")))),
                entry("eye", GoldenOp.one((in, a) -> a.has("m") ? Tensor.eye(a.i("n"), a.i("m")) : Tensor.eye(a.i("n")))),
                entry("of", GoldenOp.one((in, a) -> {
                    // the input tensor only carries the values: they go through a Java array of each kind
                    Tensor x = in.get(0);
                    int[] shape = x.dims();
                    return switch (a.s("kind")) {
                        case "float" -> Tensor.of(x.toFloatArray(), shape);
                        case "double" -> Tensor.of(x.toDoubleArray(), shape);
                        case "int" -> Tensor.of(x.toIntArray(), shape);
                        case "long" -> Tensor.of(x.toLongArray(), shape);
                        case "boolean" -> Tensor.of(x.toBooleanArray(), shape);
                        case "dtype_double" -> Tensor.of(dtype(a), x.toDoubleArray(), shape);
                        case "dtype_long" -> Tensor.of(dtype(a), x.toLongArray(), shape);
                        default -> throw new IllegalArgumentException("unknown kind " + a.s("kind"));
                    };
                })),
                entry("fromSegment", GoldenOp.one((in, a) -> Tensor.fromSegment(in.get(0).buffer().toHost().segment(), dtype(a), a.ints("shape")))),
                entry("fullLike", GoldenOp.one((in, a) -> inputs(in, a).get(0).fullLike(a.number("value")))),
                entry("zerosLike", GoldenOp.one((in, a) -> inputs(in, a).get(0).zerosLike())),
                entry("onesLike", GoldenOp.one((in, a) -> inputs(in, a).get(0).onesLike())),
                entry("cast", GoldenOp.one((in, a) -> inputs(in, a).get(0).cast(dtype(a)))),
                entry("bitcast", GoldenOp.one((in, a) -> inputs(in, a).get(0).bitcast(dtype(a)))));
    }
}
