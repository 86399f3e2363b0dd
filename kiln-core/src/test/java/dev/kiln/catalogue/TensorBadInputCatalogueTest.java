package dev.kiln.catalogue;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.stream.Stream;

import static dev.kiln.catalogue.BadInput.bad;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Tensor API's bad-input catalogue (issue 13): one row per case, checked by {@link BadInput#check()}: the exception
 * type, a one-line message naming the op, what it expected and what it was given, and no Java internals. Every row fails
 * while the graph is built (shapes and arguments are checked when a node is made), so nothing here compiles or runs.
 */
class TensorBadInputCatalogueTest {
    private static final Class<IllegalArgumentException> IAE = IllegalArgumentException.class;

    private static Tensor z(int... dims) { return Tensor.zeros(dims); }

    private static Tensor z(DType t, int... dims) { return Tensor.zeros(t, dims); }

    private static Tensor i64(long... v) { return Tensor.of(v, v.length); }

    static Stream<BadInput> cases() {
        Tensor a23 = z(2, 3), a32 = z(3, 2), img = z(1, 3, 8, 8);
        return Stream.of(
                // ---- creation
                bad("of: data shorter than the shape", IAE, () -> Tensor.of(new float[5], 2, 3),
                        "of: 5 values do not fill shape [2, 3] (6 elements)"),
                bad("of: data longer than the shape", IAE, () -> Tensor.of(new float[7], 2, 3), "of: 7 values do not fill shape [2, 3] (6 elements)"),
                bad("of: a negative dim", IAE, () -> Tensor.of(new float[0], 0, -1), "shape [0, -1] has negative dimension -1 at axis 1"),
                bad("of(long[]): length mismatch", IAE, () -> Tensor.of(new long[3], 2, 2), "of: 3 values do not fill shape [2, 2] (4 elements)"),
                bad("of(boolean[]): length mismatch", IAE, () -> Tensor.of(new boolean[1], 2), "of: 1 values do not fill shape [2] (2 elements)"),
                bad("of(dtype, double[]): packed dtype", IAE, () -> Tensor.of(DType.Q8_0, new double[32], 32),
                        "of: packed dtype q8_0 holds weights only; it has no element values"),
                bad("full: a negative dim", IAE, () -> Tensor.full(1.0, DType.F32, 2, -3), "shape [2, -3] has negative dimension -3 at axis 1"),
                bad("zeros: a shape past a long of elements", IAE, () -> Tensor.zeros(1 << 30, 1 << 30, 1 << 30, 1 << 30),
                        "shape [1073741824, 1073741824, 1073741824, 1073741824] is too large: its axes span 1329227995784915872903807060280344576 elements"),
                bad("fromSegment: too few bytes", IAE, () -> Tensor.fromSegment(MemorySegment.ofArray(new byte[8]), DType.F32, 3),
                        "fromSegment: shape [3] of f32 needs 12 bytes, segment has 8"),
                bad("wrapConstant: too few bytes", IAE, () -> Tensor.wrapConstant(MemorySegment.ofArray(new byte[4]), DType.F64, 1),
                        "wrapConstant: shape [1] of f64 needs 8 bytes, segment has 4"),
                bad("arange: step 0", IAE, () -> Tensor.arange(0, 10, 0), "arange: step must not be 0"),
                bad("arange(double): step 0", IAE, () -> Tensor.arange(0.0, 1.0, 0.0), "arange: step must be finite and non-zero, got 0.0"),
                bad("arange: a range of more than 2^31 elements", IAE, () -> Tensor.arange(0.0, 1e12, 1.0),
                        "arange: 1000000000000 elements from 0.0 to 1.0E12 by 1.0 are too many"),
                bad("linspace: negative steps", IAE, () -> Tensor.linspace(0, 1, -2), "linspace: steps must be >= 0, got -2"),
                bad("eye: a negative size", IAE, () -> Tensor.eye(-1, 3), "eye: expected sizes of 0 or more, got -1 x 3"),
                bad("range: delta 0", IAE, () -> Tensor.range(0, 5, 0, DType.I64), "range: delta must not be 0"),
                bad("range: a bool dtype", IAE, () -> Tensor.range(0, 5, 1, DType.BOOL), "range: dtype must be numeric, got bool"),
                bad("hannWindow: a negative size", IAE, () -> Tensor.hannWindow(-4, true, DType.F32), "hannWindow: size must be >= 0, got -4"),
                bad("hannWindow: 2^31 - 1 elements", IAE, () -> Tensor.hannWindow(Integer.MAX_VALUE, true, DType.F32),
                        "hannWindow: 2147483647 elements are more than one Java array holds (2147483639)"),
                bad("linspace: 2^31 - 1 steps", IAE, () -> Tensor.linspace(0, 1, Integer.MAX_VALUE),
                        "linspace: 2147483647 elements are more than one Java array holds (2147483639)"),
                bad("range: 2^31 elements of a span past a long", IAE, () -> Tensor.range(Long.MIN_VALUE, Long.MAX_VALUE, 4, DType.I64),
                        "range: 4611686018427387904 elements from -9223372036854775808 to 9223372036854775807 by 4 are too many"),
                bad("hammingWindow: a bool dtype", IAE, () -> Tensor.hammingWindow(4, true, DType.BOOL),
                        "hammingWindow: dtype must be numeric, got bool"),
                bad("randint: low not below high", IAE, () -> Tensor.randint(1, 5, 5, 3), "randint: needs low < high, got low 5, high 5"),
                bad("randint: a float dtype", IAE, () -> Tensor.randint(1, 0, 5, DType.F32, 3), "randint: dtype must be an integer dtype, got f32"),
                bad("rand: an integer dtype", IAE, () -> Tensor.rand(1, DType.I32, 3),
                        "rand: dtype must be a float dtype (f16, bf16, f32, f64), got i32"),
                bad("bernoulli: p above 1", IAE, () -> Tensor.bernoulli(1, 1.5, 3), "bernoulli: probability must be in [0, 1], got 1.5"),
                bad("uniform: low above high", IAE, () -> Tensor.uniform(1, 2.0, 1.0, 3),
                        "uniform: needs low < high, both finite in f32, got low 2.0, high 1.0"),
                bad("normal: a negative std", IAE, () -> Tensor.normal(1, 0, -1, 3),
                        "normal: needs a finite mean and a finite std >= 0, got mean 0.0, std -1.0"),
                bad("rotaryTables: an odd dim", IAE, () -> Tensor.rotaryTables(4, 5, 10000), "rotaryTables: dim must be positive and even, got 5"),

                // ---- elementwise and broadcasting
                bad("add: shapes that do not broadcast", IAE, () -> a23.add(a32), "add: shapes [2, 3] and [3, 2] cannot broadcast (axis -2: 2 vs 3)"),
                bad("sub: shapes that do not broadcast", IAE, () -> a23.sub(z(4)), "sub: shapes [2, 3] and [4] cannot broadcast (axis -1: 3 vs 4)"),
                bad("div: shapes that do not broadcast", IAE, () -> a23.div(z(2)), "div: shapes [2, 3] and [2] cannot broadcast (axis -1: 3 vs 2)"),
                bad("maximum: shapes that do not broadcast", IAE, () -> a23.maximum(z(5, 3)),
                        "maximum: shapes [2, 3] and [5, 3] cannot broadcast (axis -2: 2 vs 5)"),
                bad("pow: shapes that do not broadcast", IAE, () -> a23.pow(z(3, 3)),
                        "pow: shapes [2, 3] and [3, 3] cannot broadcast (axis -2: 2 vs 3)"),
                bad("where: a condition that does not broadcast", IAE, () -> Tensor.where(z(DType.BOOL, 4), a23, 0.0),
                        "where: shapes [4] and [2, 3] cannot broadcast (axis -1: 4 vs 3)"),
                bad("lt: shapes that do not broadcast", IAE, () -> a23.lt(a32), "lt: shapes [2, 3] and [3, 2] cannot broadcast (axis -2: 2 vs 3)"),
                bad("eq: shapes that do not broadcast", IAE, () -> a23.eq(z(7)), "eq: shapes [2, 3] and [7] cannot broadcast (axis -1: 3 vs 7)"),
                bad("add: an unsupported operand type", IAE, () -> a23.add("one"), "add: operand must be a Tensor, Number or Boolean, got String"),
                bad("mul: a null operand", IAE, () -> a23.mul(null), "mul: operand must be a Tensor, Number or Boolean, got null"),
                bad("clamp: bounds that do not broadcast", IAE, () -> a23.clamp(z(4), 1.0),
                        "clamp: shapes [2, 3] and [4] cannot broadcast (axis -1: 3 vs 4)"),
                bad("lerp: a weight that does not broadcast", IAE, () -> a23.lerp(a23, z(5)),
                        "lerp: shapes [2, 3] and [5] cannot broadcast (axis -1: 3 vs 5)"),
                bad("maskedFill: a mask that does not broadcast", IAE, () -> a23.maskedFill(z(DType.BOOL, 3, 3), 1),
                        "where: shapes [3, 3] and [2, 3] cannot broadcast (axis -2: 3 vs 2)"),
                bad("bitwiseAnd: floats", IAE, () -> a23.bitwiseAnd(a23), "bitwiseAnd: needs integer or bool operands, got f32"),
                bad("bitwiseNot: floats", IAE, () -> a23.bitwiseNot(), "bitwiseNot: needs integer or bool operands, got f32"),
                bad("shl: a float shift", IAE, () -> z(DType.I32, 2).shl(1.5), "shl: needs integer or bool operands, got f32"),
                bad("shr: floats", IAE, () -> a23.shr(1), "shr: needs integer or bool operands, got f32"),
                bad("neg: bools", IAE, () -> z(DType.BOOL, 2).neg(), "neg: not defined on bool; use logicalNot"),
                bad("cast: to a packed dtype", IAE, () -> a23.cast(DType.Q4_0),
                        "cast: packed dtype q4_0 holds weights only; it has no element values"),
                bad("bitcast: to a dtype of another width", IAE, () -> a23.bitcast(DType.F64),
                        "bitcast: f32 (4 bytes) to f64 (8 bytes) needs equal item sizes"),
                bad("prelu: a slope that does not broadcast", IAE, () -> a23.prelu(z(4)),
                        "prelu: slope [4] must broadcast to input [2, 3] (a 1-D slope is taken per channel, as [1, 4])"),

                // ---- reductions
                bad("sum: axis past the rank", IAE, () -> a23.sum(2), "sum: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("sum: axis before -rank", IAE, () -> a23.sum(-3), "sum: axis -3 out of range for shape [2, 3] (rank 2)"),
                bad("max: an axis given twice", IAE, () -> a23.max(0, 0), "max: axis 0 given twice in [0, 0]"),
                bad("mean: axis past the rank", IAE, () -> a23.mean(5), "mean: axis 5 out of range for shape [2, 3] (rank 2)"),
                bad("var: axis past the rank", IAE, () -> a23.var(3), "var: axis 3 out of range for shape [2, 3] (rank 2)"),
                bad("prod: axis past the rank", IAE, () -> a23.prod(2), "prod: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("argmax: axis past the rank", IAE, () -> a23.argmax(2), "argmax: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("argmin: axis before -rank", IAE, () -> a23.argmin(-4), "argmin: axis -4 out of range for shape [2, 3] (rank 2)"),
                bad("argmax: an empty axis", IAE, () -> z(2, 0).argmax(1), "argmax: axis 1 of shape [2, 0] is empty"),
                bad("cumsum: axis past the rank", IAE, () -> a23.cumsum(2), "cumsum: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("cumprod: axis past the rank", IAE, () -> a23.cumprod(-3), "cumprod: axis -3 out of range for shape [2, 3] (rank 2)"),
                bad("logsumexp: axis past the rank", IAE, () -> a23.logsumexp(4), "logsumexp: axis 4 out of range for shape [2, 3] (rank 2)"),
                bad("softmax: axis past the rank", IAE, () -> a23.softmax(2), "softmax: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("logSoftmax: axis past the rank", IAE, () -> a23.logSoftmax(-3), "logSoftmax: axis -3 out of range for shape [2, 3] (rank 2)"),
                bad("hardmax: axis past the rank", IAE, () -> a23.hardmax(2), "hardmax: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("any: axis past the rank", IAE, () -> a23.any(2), "any: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("dim: axis past the rank", IAE, () -> a23.dim(2), "dim: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("item: a tensor of 6 elements", IAE, () -> a23.item(), "item: tensor of shape [2, 3] has 6 elements, not 1"),

                // ---- movement
                bad("reshape: another element count", IAE, () -> a23.reshape(4, 2),
                        "reshape: cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)"),
                bad("reshape: -1 that does not divide", IAE, () -> a23.reshape(-1, 4),
                        "reshape: cannot infer -1 in [-1, 4] for shape [2, 3] (6 elements)"),
                bad("reshape: two -1", IAE, () -> a23.reshape(-1, -1), "reshape: more than one -1 in [-1, -1]"),
                bad("reshape: -2", IAE, () -> a23.reshape(-2, -3), "reshape: negative dimension -2 in [-2, -3]"),
                bad("permute: a repeated axis", IAE, () -> a23.permute(1, 1), "permute: axis 1 repeated in [1, 1]"),
                bad("permute: too few axes", IAE, () -> a23.permute(0), "permute: order [0] has 1 axes, shape [2, 3] has 2"),
                bad("permute: an axis past the rank", IAE, () -> a23.permute(0, 2), "permute: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("transpose: an axis past the rank", IAE, () -> a23.transpose(0, 2), "transpose: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("mT: a vector", IAE, () -> z(3).mT(), "mT: needs at least 2 axes, shape is [3]"),
                bad("expand: a non-1 axis", IAE, () -> a23.expand(4, 3), "expand: axis 0 of [2, 3] has size 2, cannot expand to 4"),
                bad("expand: fewer axes", IAE, () -> a23.expand(3), "expand: shape [3] has fewer axes than [2, 3]"),
                bad("broadcastTo: an incompatible shape", IAE, () -> a23.broadcastTo(2, 4),
                        "broadcastTo: shapes [2, 3] and [2, 4] cannot broadcast (axis -1: 3 vs 4)"),
                bad("squeeze: an axis of size 2", IAE, () -> a23.squeeze(0), "squeeze: axis 0 of shape [2, 3] has size 2, not 1"),
                bad("squeeze: an axis past the rank", IAE, () -> a23.squeeze(3), "squeeze: axis 3 out of range for shape [2, 3] (rank 2)"),
                bad("unsqueeze: an axis past rank + 1", IAE, () -> a23.unsqueeze(4), "unsqueeze: axis 4 out of range for shape [2, 3] (rank 3)"),
                bad("flatten: start after end", IAE, () -> z(2, 3, 4).flatten(2, 1), "flatten: start axis 2 is after end axis 1 for shape [2, 3, 4]"),
                bad("flip: an axis past the rank", IAE, () -> a23.flip(2), "flip: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("slice: step 0", IAE, () -> a23.slice(1, 0, 3, 0), "slice: step must not be 0 (axis 1 of shape [2, 3])"),
                bad("slice: an axis past the rank", IAE, () -> a23.slice(2, 0, 1, 1), "slice: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("pad: pads for more axes than the rank", IAE, () -> a23.pad(new int[][] {{0, 0}, {0, 0}, {1, 1}}),
                        "pad: 3 (before, after) pairs for shape [2, 3] of rank 2"),
                bad("pad: a pair of three", IAE, () -> a23.pad(new int[][] {{0, 0, 0}, {0, 0}}),
                        "pad: axis 0 needs a (before, after) pair, got [0, 0, 0]"),
                bad("pad: a reflection wider than the axis", IAE, () -> a23.pad(new int[][] {{0, 0}, {5, 5}}, Tensor.PadMode.REFLECT, 0),
                        "pad: reflect padding (5, 5) needs less than the axis size 3 (axis 1 of [2, 3])"),
                bad("pad: a negative pad past the axis", IAE, () -> a23.pad(new int[][] {{0, 0}, {-2, -2}}),
                        "pad: negative pads (-2, -2) remove 4 elements from axis 1 of [2, 3], which has 3"),
                bad("cat: no tensors", IAE, () -> Tensor.cat(0), "cat: needs at least one tensor"),
                bad("cat: ranks that differ", IAE, () -> Tensor.cat(0, a23, z(3)), "cat: shapes [2, 3] and [3] have different ranks"),
                bad("cat: another size off the axis", IAE, () -> Tensor.cat(0, a23, a32),
                        "cat: shapes [2, 3] and [3, 2] differ at axis 1 (cat axis 0)"),
                bad("cat: an axis past the rank", IAE, () -> Tensor.cat(2, a23, a23), "cat: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("stack: shapes that differ", IAE, () -> Tensor.stack(0, a23, a32), "stack: shapes [2, 3] and [3, 2] differ"),
                bad("stack: an axis past rank + 1", IAE, () -> Tensor.stack(3, a23, a23),
                        "stack: axis 3 out of range for stacking shape [2, 3] (expected -3 to 2)"),
                bad("split: sizes that do not sum to the axis", IAE, () -> a23.split(new int[] {1, 1}, 1),
                        "split: sizes [1, 1] do not add up to axis 1 of [2, 3]"),
                bad("split: size 0", IAE, () -> a23.split(0, 1), "split: size must be > 0, got 0"),
                bad("chunk: 0 chunks", IAE, () -> a23.chunk(0, 1), "chunk: chunks must be > 0, got 0"),
                bad("repeat: fewer repeats than axes", IAE, () -> a23.repeat(2), "repeat: 1 repeats for shape [2, 3] of rank 2"),
                bad("repeat: a negative repeat", IAE, () -> a23.repeat(1, -1), "repeat: negative count -1"),
                bad("tile: a negative repetition", IAE, () -> a23.tile(-2, 1), "tile: repetitions [-2, 1] of [2, 3] hold a negative count -2"),
                bad("triu: a vector", IAE, () -> z(3).triu(0), "triu: needs at least 2 axes, shape is [3]"),
                bad("depthToSpace: channels not divisible", IAE, () -> z(1, 3, 2, 2).depthToSpace(2, "DCR"),
                        "depthToSpace: channels 3 of input [1, 3, 2, 2] are not divisible by blockSize^2 = 4"),
                bad("depthToSpace: an unknown mode", IAE, () -> z(1, 4, 2, 2).depthToSpace(2, "XYZ"),
                        "depthToSpace: unknown mode 'XYZ'; valid are 'DCR', 'CRD'"),
                bad("spaceToDepth: a size not divisible", IAE, () -> z(1, 1, 3, 3).spaceToDepth(2),
                        "spaceToDepth: spatial size 3x3 of input [1, 1, 3, 3] is not divisible by blockSize 2"),
                bad("withSymbolicDim: an axis past the rank", IAE, () -> a23.withSymbolicDim(2, new Variable("n", 1, 3)),
                        "withSymbolicDim: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("withSymbolicDim: a maximum other than the dim", IAE, () -> a23.withSymbolicDim(1, new Variable("n", 1, 5)),
                        "shape [2, 3]: axis 1 has size 3, but variable 'n' has maximum 5"),

                // ---- linear algebra
                bad("matmul: inner dims that differ", IAE, () -> a23.matmul(a23), "matmul: [2, 3] @ [2, 3]: inner dimensions 3 and 2 differ"),
                bad("matmul: a scalar", IAE, () -> a23.matmul(Tensor.scalar(1.0)),
                        "matmul: operands must have at least 1 axis, got shapes [2, 3] and []"),
                bad("matmul: batch dims that do not broadcast", IAE, () -> z(2, 2, 3).matmul(z(3, 3, 4)),
                        "matmul: [2, 2, 3] @ [3, 3, 4]: batch dimensions [2] and [3] do not broadcast"),
                bad("linear: a weight of the wrong width", IAE, () -> a23.linear(z(4, 4), null),
                        "linear: input [2, 3] must end in the 4 features of weight [4, 4] (out, in)"),
                bad("linear: a bias of the wrong size", IAE, () -> a23.linear(z(4, 3), z(5)),
                        "linear: bias [5] must broadcast to the output [2, 4] (one value per output of weight [4, 3])"),
                bad("einsum: operands and terms that differ", IAE, () -> Tensor.einsum("ij,jk->ik", a23),
                        "einsum: 'ij,jk->ik' names 2 operands, got 1"),
                bad("einsum: a term of the wrong rank", IAE, () -> Tensor.einsum("ijk->i", a23),
                        "einsum: operand 0 has shape [2, 3] but subscripts 'ijk'"),
                bad("einsum: a label whose sizes differ", IAE, () -> Tensor.einsum("ij,ij->i", a23, a32),
                        "einsum: subscript 'i' has size 2 and 3 in 'ij,ij->i'"),
                bad("einsum: an output label no input has", IAE, () -> Tensor.einsum("ij->iz", a23),
                        "einsum: output subscript 'z' not among the inputs of 'ij->iz'"),
                bad("einsum: a character that is no label", IAE, () -> Tensor.einsum("i1->i", a23), "einsum: invalid subscript '1' in 'i1->i'"),
                bad("det: a non-square matrix", IAE, () -> a23.det(), "det: needs square matrices on the last two axes, got [2, 3]"),

                // ---- convolution, pooling, normalization
                bad("conv2d: a 3-D input", IAE, () -> z(3, 8, 8).conv2d(z(4, 3, 3, 3), null),
                        "conv2d: input must be 4-D (N, C, H, W), got [3, 8, 8]"),
                bad("conv2d: channels that differ", IAE, () -> img.conv2d(z(4, 2, 3, 3), null),
                        "conv2d: input [1, 3, 8, 8] has 3 channels, weight [4, 2, 3, 3] expects 2 (groups 1)"),
                bad("conv2d: a kernel larger than the padded input", IAE, () -> img.conv2d(z(4, 3, 9, 9), null),
                        "conv2d: kernel [9, 9] (dilation [1, 1]) is larger than input [1, 3, 8, 8] padded by [0, 0] (spatial axis 0)"),
                bad("conv2d: stride 0", IAE, () -> img.conv2d(z(4, 3, 3, 3), null, new int[] {0, 1}, null, null, 1),
                        "conv2d: stride must be positive, got [0, 1]"),
                bad("conv2d: a negative padding", IAE, () -> img.conv2d(z(4, 3, 3, 3), null, null, new int[] {-1, 0}, null, 1),
                        "conv2d: padding must not be negative, got [-1, 0]"),
                bad("conv2d: dilation 0", IAE, () -> img.conv2d(z(4, 3, 3, 3), null, null, null, new int[] {0, 0}, 1),
                        "conv2d: dilation must be positive, got [0, 0]"),
                bad("convTranspose2d: channels that differ", IAE, () -> img.convTranspose2d(z(2, 4, 3, 3), null),
                        "convTranspose2d: input [1, 3, 8, 8] has 3 channels, weight [2, 4, 3, 3] expects 2 (groups 1)"),
                bad("convTranspose2d: output padding not below stride", IAE, () -> img.convTranspose2d(z(3, 4, 3, 3), null,
                        new int[] {1, 1}, null, new int[] {1, 1}, null, 1),
                        "convTranspose2d: outputPadding [1, 1] must be smaller than stride [1, 1] or dilation [1, 1] (spatial axis 0)"),
                bad("maxPool2d: a kernel larger than the input", IAE, () -> img.maxPool2d(9, 9),
                        "maxPool2d: kernel [9, 9] (dilation [1, 1]) does not fit input [1, 3, 8, 8] padded by [0, 0] (spatial axis 0)"),
                bad("maxPool2d: kernel 0", IAE, () -> img.maxPool2d(0, 2), "maxPool2d: kernel must be positive, got [0, 2]"),
                bad("maxPool2d: padding over half the kernel", IAE, () -> img.maxPool2d(new int[] {2, 2}, null, new int[] {2, 2}, null, false),
                        "maxPool2d: padding [2, 2] must be at most half the kernel [2, 2]"),
                bad("avgPool2d: a 2-D input", IAE, () -> z(8, 8).avgPool2d(2, 2),
                        "avgPool2d: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got [8, 8]"),
                bad("lpPool2d: p of 0", IAE, () -> img.lpPool2d(0, new int[] {2, 2}, null, false),
                        "lpPool2d: p must be positive and finite, got 0.0"),
                bad("globalAvgPool: a vector", IAE, () -> z(3).globalAvgPool(),
                        "globalAvgPool: input must be at least 3-D (N, C, spatial...), got [3]"),
                bad("batchNorm: a mean of the wrong size", IAE, () -> img.batchNorm(z(4), z(3), null, null, 1e-5),
                        "batchNorm: runningMean [4] must be 1-D with one value for each of the 3 channels of input [1, 3, 8, 8]"),
                bad("layerNorm: a shape that is not the input's tail", IAE, () -> img.layerNorm(new int[] {7}, null, null, 1e-5),
                        "layerNorm: normalizedShape [7] does not match the trailing dimensions of input [1, 3, 8, 8]"),
                bad("groupNorm: groups that do not divide the channels", IAE, () -> img.groupNorm(2, null, null, 1e-5),
                        "groupNorm: 2 groups do not divide the 3 channels of input [1, 3, 8, 8]"),
                bad("instanceNorm: a weight of the wrong size", IAE, () -> img.instanceNorm(z(5), null, 1e-5),
                        "instanceNorm: weight [5] must be 1-D with one value for each of the 3 channels of input [1, 3, 8, 8]"),
                bad("rmsNorm: a weight of the wrong shape", IAE, () -> img.rmsNorm(new int[] {8}, z(9), 1e-5),
                        "rmsNorm: weight [9] must have the normalized shape [8]"),
                bad("lrn: size 0", IAE, () -> img.lrn(0, 1e-4, 0.75, 1), "lrn: size must be > 0, got 0"),
                bad("lpNormalization: p of 3", IAE, () -> a23.lpNormalization(1, 3), "lpNormalization: p must be 1 or 2, got 3"),
                bad("embedding: float indices", IAE, () -> Tensor.embedding(z(2), z(5, 4)),
                        "embedding: indices must have an integer dtype, got f32 [2]"),
                bad("embedding: a weight that is not 2-D", IAE, () -> Tensor.embedding(i64(1, 2), z(5)),
                        "embedding: weight must be 2-D (numEmbeddings, dim), got [5]"),

                // ---- indexing
                bad("gather: float indices", IAE, () -> a23.gather(1, z(2, 3)), "gather: index must have an integer dtype, got f32"),
                bad("gather: an axis past the rank", IAE, () -> a23.gather(2, z(DType.I64, 2, 3)),
                        "gather: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("indexSelect: a 2-D index", IAE, () -> a23.indexSelect(0, z(DType.I64, 2, 3)),
                        "indexSelect: index must be 1-D, got shape [2, 3]"),
                bad("takeAlongAxis: ranks that differ", IAE, () -> a23.takeAlongAxis(i64(0), 1),
                        "takeAlongAxis: indices [1] has rank 1, input [2, 3] has rank 2; they must match"),
                bad("oneHot: float indices", IAE, () -> a23.oneHot(3), "oneHot: index must have an integer dtype, got f32"),
                bad("oneHot: 0 classes", IAE, () -> z(DType.I64, 3).oneHot(0),
                        "oneHot: numClasses must be > 0 (it cannot be inferred from lazy indices), got 0"),
                bad("gatherElements: ranks that differ", IAE, () -> a23.gatherElements(0, i64(0, 1)),
                        "gatherElements: indices [2] have rank 1, input [2, 3] has rank 2; they must match"),
                bad("gatherND: batch dims past the rank", IAE, () -> a23.gatherND(z(DType.I64, 2, 1), 3),
                        "gatherND: batchDims 3 must be in [0, 2) for input [2, 3] and indices [2, 1]"),
                bad("gatherND: an index tuple longer than the rank", IAE, () -> a23.gatherND(z(DType.I64, 2, 3), 0),
                        "gatherND: indices [2, 3] address 3 axes after 0 batch axes, input [2, 3] has 2"),
                bad("scatterElements: an unknown reduction", IAE, () -> a23.scatterElements(0, z(DType.I64, 2, 3), a23, "median"),
                        "scatterElements: unknown reduction 'median'; valid are 'none', 'add', 'mul', 'max', 'min'"),
                bad("scatterND: updates of the wrong shape", IAE, () -> a23.scatterND(z(DType.I64, 2, 1), z(2, 4), "none"),
                        "scatterND: updates [2, 4] must have shape [2, 3] for input [2, 3] and indices [2, 1]"),
                bad("sort: an axis past the rank", IAE, () -> a23.sort(2, false), "sort: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("topk: k past the axis", IAE, () -> a23.topk(4, 1, true), "topk: k 4 out of range for axis 1 of shape [2, 3] (size 3)"),
                bad("topk: a negative k", IAE, () -> a23.topk(-1, -1, false), "topk: k -1 out of range for axis -1 of shape [2, 3] (size 3)"),
                bad("maxUnpool: an output shape of the wrong rank", IAE, () -> img.maxUnpool(z(DType.I64, 1, 3, 8, 8), new int[] {16, 16}),
                        "maxUnpool: outputShape [16, 16] must be (N, C, spatial...) of input [1, 3, 8, 8]"),
                bad("reverseSequence: lengths of the wrong count", IAE, () -> z(4, 2, 3).reverseSequence(i64(1, 2, 3), 1, 0),
                        "reverseSequence: sequenceLens [3] must be 1-D of the batch size 2 (input [4, 2, 3], batch axis 1)"),
                bad("reverseSequence: the same batch and time axis", IAE, () -> z(4, 2, 3).reverseSequence(i64(1, 2), 1, 1),
                        "reverseSequence: batchAxis 1 and timeAxis 1 name the same axis of [4, 2, 3]"),

                // ---- attention, losses, quantization, signal, resampling
                bad("scaledDotProductAttention: key dims that differ", IAE, () -> Tensor.scaledDotProductAttention(z(1, 2, 4, 8), z(1, 2, 4, 6),
                        z(1, 2, 4, 8), null, false, null), "scaledDotProductAttention: q [1, 2, 4, 8] and k [1, 2, 4, 6] have different feature sizes 8 and 6"),
                bad("rotaryEmbedding: tables of the wrong width", IAE, () -> z(1, 4, 8).rotaryEmbedding(z(4, 3), z(4, 3), false),
                        "rotaryEmbedding: cos/sin [4, 3] do not broadcast to x [1, 4, 8] (last axis must be 8 or 4)"),
                bad("nllLoss: an unknown reduction", IAE, () -> a23.nllLoss(i64(0, 1), null, "average", null),
                        "nllLoss: unknown reduction 'average'; valid are 'none', 'sum', 'mean'"),
                bad("nllLoss: float targets", IAE, () -> a23.nllLoss(z(2), null, "mean", null),
                        "nllLoss: indices must have an integer dtype, got f32"),
                bad("softmaxCrossEntropyLoss: labels of the wrong count", IAE, () -> a23.softmaxCrossEntropyLoss(i64(0, 1, 2), null, "mean", null),
                        "softmaxCrossEntropyLoss: target [3] must have shape [2] for input [2, 3]"),
                bad("quantizeLinear: a scale of the wrong size", IAE, () -> a23.quantizeLinear(z(5), null, 1),
                        "quantizeLinear: scale [5] must be a scalar or 1-D of size 3 (axis 1 of input [2, 3])"),
                bad("dequantizeLinear: an axis past the rank", IAE, () -> z(DType.I8, 2, 3).dequantizeLinear(z(3), null, 2),
                        "dequantizeLinear: axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("dft: an axis past the rank", IAE, () -> z(2, 3, 1).dft(2, false, false, null),
                        "dft: axis 2 must name a signal axis of [2, 3, 1] (not the complex axis)"),
                bad("dft: a length of 0", IAE, () -> z(2, 3, 1).dft(1, false, false, 0), "dft: dft length must be > 0, got 0 (input [2, 3, 1])"),
                bad("dft: no complex axis", IAE, () -> a23.dft(1, false, false, null),
                        "dft: input [2, 3] must end in a complex axis of size 1 (real) or 2 (real, imaginary)"),
                bad("stft: a frame step of 0", IAE, () -> z(1, 16, 1).stft(0, null, 4, false), "stft: frameStep must be > 0, got 0"),
                bad("stft: a 2-D signal", IAE, () -> z(1, 16).stft(2, null, 4, false), "stft: signal must be (batch, length, 1 or 2), got [1, 16]"),
                bad("interpolate: an unknown mode", IAE, () -> img.interpolate(new int[] {4, 4}, "bicubical", false),
                        "interpolate: unknown mode 'bicubical'; valid modes are 'nearest', 'linear'"),
                bad("interpolate: sizes for the wrong rank", IAE, () -> img.interpolate(new int[] {4}, "nearest", false),
                        "interpolate: size [4] has 1 entries, input [1, 3, 8, 8] has 2 spatial axes"),
                bad("gridSample: a grid of the wrong rank", IAE, () -> img.gridSample(z(1, 4, 4), "bilinear", "zeros", false),
                        "gridSample: grid [1, 4, 4] must be (N, Ho, Wo, 2) with N = 1 of input [1, 3, 8, 8]"),
                bad("gridSample: an unknown padding mode", IAE, () -> img.gridSample(z(1, 4, 4, 2), "bilinear", "mirror", false),
                        "gridSample: unknown padding mode 'mirror'; valid are 'zeros', 'border', 'reflection'"),
                bad("assign: a value of another shape", IAE, () -> a23.assign(a32), "assign: value f32[3, 2] does not match target f32[2, 3]"),
                bad("to: an unknown device", IAE, () -> a23.to("NOPE"), "unknown device 'NOPE'"));
    }

    /** Not bad input, but found beside it: a span past a long wrapped to a negative count, and the range came out empty. */
    @Test
    void aRangeWhoseSpanPassesALongHasItsElements() {
        long[] v = Tensor.range(-9_000_000_000_000_000_000L, 9_000_000_000_000_000_000L, 1_000_000_000_000_000_000L, DType.I64).to("INTERP").toLongArray();
        assertThat(v).hasSize(18).startsWith(-9_000_000_000_000_000_000L).endsWith(8_000_000_000_000_000_000L);
        assertThat(Tensor.range(9_000_000_000_000_000_000L, -9_000_000_000_000_000_000L, -3_000_000_000_000_000_000L, DType.I64).to("INTERP")
                .toLongArray()).containsExactly(9_000_000_000_000_000_000L, 6_000_000_000_000_000_000L, 3_000_000_000_000_000_000L, 0L,
                -3_000_000_000_000_000_000L, -6_000_000_000_000_000_000L);
        assertThat(Tensor.range(5, 1, 1, DType.I64).numel()).isZero();
        assertThat(Tensor.range(0, 7, 3, DType.I32).to("INTERP").toLongArray()).containsExactly(0, 3, 6);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void failsTypedOnOneLine(BadInput c) {
        c.check();
    }

    @Test
    void theCatalogueHoldsDistinctCases() {
        BadInput.assertDistinct(cases().toList(), 150);
    }
}
