package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.TensorProtos;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static dev.kiln.cli.CommandsTest.kiln;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The CLI on ONNX models from the conformance data, end to end: run, profile, bench, onnx-test, --dim and bad input. */
@ExtendWith(FixedMachinePeak.class)
class OnnxCommandsTest {
    /** The conformance data, beside the repository (the tests run in kiln-cli/). */
    static final Path CONFORMANCE = Path.of("../../shared/conformance").toAbsolutePath().normalize();
    static final Path NODE = CONFORMANCE.resolve("onnx-node");
    static final Path CONV = NODE.resolve("test_conv_with_strides_padding");

    @TempDir
    Path tmp;

    /** The case's input K as a .npy file. */
    private Path npyOf(Path caseDir, int k) {
        Path f = tmp.resolve("input_" + k + ".npy");
        Npy.write(f, TensorProtos.read(caseDir.resolve("test_data_set_0/input_" + k + ".pb")));
        return f;
    }

    private static List<String> filesIn(Path dir) throws IOException {
        if (!Files.exists(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static void assertClose(Tensor got, Tensor want) {
        assertThat(got.dtype()).isEqualTo(want.dtype());
        assertThat(got.dims()).containsExactly(want.dims());
        float[] g = got.toFloatArray(), e = want.toFloatArray();
        for (int i = 0; i < e.length; i++) assertThat(g[i]).as("element %d", i).isCloseTo(e[i], within(1e-4f + 1e-4f * Math.abs(e[i])));
    }

    // ------------------------------------------------------------------------------------ run, profile, bench

    @Test
    void runWritesTheOutputsAndTheyMatchTheReference() {
        Path model = CONV.resolve("model.onnx");
        Path out = tmp.resolve("out");
        CommandsTest.Result r = kiln("run", model.toString(), "--input", "x=" + npyOf(CONV, 0), "--input", "W=" + npyOf(CONV, 1),
                "--output-dir", out.toString()).ok();
        assertThat(r.out()).startsWith("y  f32 [1, 1, 4, 3]  min ").contains("-> " + out.resolve("y.npy"));
        assertThat(r.err()).isEmpty();
        assertClose(Npy.read(out.resolve("y.npy")), TensorProtos.read(CONV.resolve("test_data_set_0/output_0.pb")));
    }

    @Test
    void runOnAPytorchOperatorModelMatchesTheReference() {
        Path c = CONFORMANCE.resolve("onnx-pytorch-operator/test_operator_conv");
        OnnxModel m = OnnxModel.load(c.resolve("model.onnx"));
        String in = m.inputs().getFirst().name(), out = m.outputs().getFirst().name();
        kiln("run", c.resolve("model.onnx").toString(), "--input", in + "=" + npyOf(c, 0), "--output-dir", tmp.toString(), "--device", "INTERP").ok();
        assertClose(Npy.read(tmp.resolve(OutputFiles.safeName(out) + ".npy")), TensorProtos.read(c.resolve("test_data_set_0/output_0.pb")));
    }

    @Test
    void randomInputsAreReproducible() {
        String model = CONV.resolve("model.onnx").toString();
        kiln("run", model, "--random-inputs", "--seed", "7", "--output-dir", tmp.resolve("a").toString()).ok();
        kiln("run", model, "--random-inputs", "--seed", "7", "--output-dir", tmp.resolve("b").toString()).ok();
        assertThat(Npy.read(tmp.resolve("b/y.npy")).toFloatArray()).containsExactly(Npy.read(tmp.resolve("a/y.npy")).toFloatArray());
    }

    @Test
    void profileAndBenchAnOnnxModel() throws IOException {
        String model = CONV.resolve("model.onnx").toString();
        CommandsTest.Result p = kiln("profile", model, "--random-inputs", "--runs", "2", "--warmup", "1", "--output-dir", tmp.toString()).ok();
        assertThat(p.out()).contains("profile of test_conv_with_strides_padding on CPU").contains("time (us)").contains("GFLOP/s")
                .contains("total (");
        assertThat(Files.readString(tmp.resolve("test_conv_with_strides_padding.trace.json"))).startsWith("{\"displayTimeUnit\"");
        CommandsTest.Result b = kiln("bench", model, "--random-inputs", "--runs", "3", "--warmup", "1").ok();
        assertThat(b.out()).contains("bench of test_conv_with_strides_padding").contains("compile").contains("latency min").contains("p90")
                .contains("throughput");
    }

    // ------------------------------------------------------------------------------------ external data

    /** kiln-onnx's model with every tensor in weights.bin beside it (tools/onnx/gen_external_data.py). */
    static final Path EXTERNAL = Path.of("../kiln-onnx/src/test/resources/external").toAbsolutePath().normalize();

    @Test
    void runProfileAndBenchAModelWithExternalData() {
        String model = EXTERNAL.resolve("model.onnx").toString();
        Path out = tmp.resolve("out");
        kiln("run", model, "--input", "x=" + EXTERNAL.resolve("input.npy"), "--output-dir", out.toString()).ok();
        assertClose(Npy.read(out.resolve("y.npy")), Npy.read(EXTERNAL.resolve("expected.npy")));
        assertThat(kiln("profile", model, "--random-inputs", "--runs", "2", "--warmup", "1", "--output-dir", tmp.toString()).ok().out())
                .contains("profile of external on CPU");
        assertThat(kiln("bench", model, "--random-inputs", "--runs", "2", "--warmup", "1").ok().out()).contains("bench of external");
    }

    @Test
    void externalDataOutsideTheModelsFolderIsOneLineAndExitTwo() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("m"));
        Files.copy(EXTERNAL.resolve("weights.bin"), dir.resolve("weights.bin"));
        Files.copy(EXTERNAL.resolve("weights.bin"), tmp.resolve("weights.bin")); // W1 alone is moved up, out of the folder
        ModelProto.Builder m = ModelProto.parseFrom(Files.readAllBytes(EXTERNAL.resolve("model.onnx"))).toBuilder();
        TensorProto.Builder w1 = m.getGraphBuilder().getInitializerBuilder(0);
        for (int k = 0; k < w1.getExternalDataCount(); k++) {
            if (w1.getExternalData(k).getKey().equals("location")) w1.setExternalData(k, w1.getExternalData(k).toBuilder().setValue("../weights.bin"));
        }
        Path model = dir.resolve("model.onnx");
        Files.write(model, m.build().toByteArray());
        kiln("run", model.toString(), "--random-inputs", "--output-dir", tmp.resolve("o").toString())
                .badInput("kiln run: " + model + " initializer W1 (tensor W1): external data location '../weights.bin' has a '..' component");
        assertThat(tmp.resolve("o")).doesNotExist();
    }

    // ------------------------------------------------------------------------------------ symbolic dims

    private static ValueInfoProto value(String name, Object... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (Object d : dims) {
            if (d instanceof String p) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimParam(p));
            else s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(((Number) d).longValue()));
        }
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(1).setShape(s))).build();
    }

    /** y = softmax(relu(x W)) with x [N, 4]. */
    private Path symbolicModel() throws IOException {
        TensorProto.Builder w = TensorProto.newBuilder().setName("W").setDataType(1).addDims(4).addDims(3);
        for (int i = 0; i < 12; i++) w.addFloatData((float) Math.cos(i));
        NodeProto mm = NodeProto.newBuilder().setOpType("MatMul").setName("mm").addInput("x").addInput("W").addOutput("m").build();
        NodeProto relu = NodeProto.newBuilder().setOpType("Relu").setName("relu").addInput("m").addOutput("r").build();
        NodeProto sm = NodeProto.newBuilder().setOpType("Softmax").setName("sm").addInput("r").addOutput("y").build();
        ModelProto p = ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(13))
                .setGraph(GraphProto.newBuilder().setName("g").addInitializer(w).addInput(value("x", "N", 4)).addOutput(value("y", "N", 3))
                        .addNode(mm).addNode(relu).addNode(sm)).build();
        Path f = tmp.resolve("sym.onnx");
        Files.write(f, p.toByteArray());
        return f;
    }

    @Test
    void dimMaximaPrepareOncePlanAndTheInputsGiveTheSize() throws IOException {
        Path model = symbolicModel();
        Tensor x = Tensor.randn(5, 5, 4).realize();
        Path in = tmp.resolve("x.npy");
        Npy.write(in, x);
        CommandsTest.Result r = kiln("run", model.toString(), "--dim", "N=16", "--input", "x=" + in, "--output-dir", tmp.resolve("o").toString()).ok();
        assertThat(r.out()).startsWith("y  f32 [5, 3]");
        Tensor want = OnnxModel.load(model).run(Map.of("x", x.to("INTERP"))).getFirst();
        assertClose(Npy.read(tmp.resolve("o/y.npy")), want);
        // the same without --dim: a plan for exactly these sizes
        kiln("run", model.toString(), "--input", "x=" + in, "--output-dir", tmp.resolve("p").toString()).ok();
        assertClose(Npy.read(tmp.resolve("p/y.npy")), want);
        kiln("bench", model.toString(), "--dim", "N=16", "--input", "x=" + in, "--runs", "2", "--warmup", "1").ok();

        kiln("run", model.toString(), "--dim", "N=4", "--input", "x=" + in, "--output-dir", tmp.resolve("q").toString())
                .badInput("dimension 'N' is 5, the plan was prepared for 1 to 4");
        kiln("run", model.toString(), "--dim", "T=4", "--random-inputs").badInput("no symbolic input dimension 'T'", "[N]");
        kiln("run", "mlp", "--dim", "N=4", "--random-inputs").badInput("--dim: only an .onnx model has symbolic dimensions");
        assertThat(tmp.resolve("q")).doesNotExist();
    }

    /** A data-dependent size under --dim: the plan selects when it runs, and the output is written at the count it produced. */
    @Test
    void aDataDependentOutputIsWrittenAtTheRunsCount() throws IOException {
        NodeProto nz = NodeProto.newBuilder().setOpType("NonZero").setName("nz").addInput("x").addOutput("idx").build();
        ValueInfoProto idx = ValueInfoProto.newBuilder().setName("idx").setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(7)))
                .build();
        ModelProto p = ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(13))
                .setGraph(GraphProto.newBuilder().setName("g").addInput(value("x", "N")).addOutput(idx).addNode(nz)).build();
        Path model = tmp.resolve("nonzero.onnx");
        Files.write(model, p.toByteArray());
        Path in = tmp.resolve("x.npy");
        Npy.write(in, Tensor.of(new float[] {0, 2, 0, 3, 5}, 5));
        CommandsTest.Result r = kiln("run", model.toString(), "--dim", "N=8", "--input", "x=" + in, "--output-dir", tmp.resolve("o").toString()).ok();
        assertThat(r.out()).startsWith("idx  i64 [1, 3]");
        assertThat(Npy.read(tmp.resolve("o/idx.npy")).toLongArray()).containsExactly(1, 3, 4);
    }

    @Test
    void aDimOverTheMemoryBudgetIsOneLineAndExitTwo() throws IOException {
        // issue 13: --dim N=2147483647 ended in an OutOfMemoryError; the plan's bytes are now checked before allocating
        Path model = symbolicModel();
        kiln("run", model.toString(), "--dim", "N=2147483647", "--random-inputs")
                .badInput("kiln run: execution plan on CPU", "needs 34359738352 bytes (32.0 GiB), over the memory budget of",
                        "-Dkiln.memory.budget or KILN_MEMORY_BUDGET");
    }

    @Test
    void anIndexOutOfRangeAtRunTimeIsOneLineAndExitTwo() {
        // issue 13: an index known only at run time read zero; now the run fails naming the node, the index and the range
        Path c = NODE.resolve("test_gather_0");
        Path indices = tmp.resolve("indices.npy");
        Npy.write(indices, Tensor.of(new long[] {0, 5, 1}, 3));
        for (String device : List.of("CPU", "INTERP")) {
            kiln("run", c.resolve("model.onnx").toString(), "--device", device, "--input", "data=" + npyOf(c, 0), "--input", "indices=" + indices,
                    "--output-dir", tmp.resolve("out").toString())
                    .badInput("kiln run: Gather node 'y': index 5 is out of range for axis 0 of size 5; valid are -5 to 4");
        }
        assertThat(tmp.resolve("out")).doesNotExist();
    }

    // ------------------------------------------------------------------------------------ onnx-test

    @Test
    void onnxTestPrintsOneLinePerCaseAndTheSummary() throws IOException {
        Path md = tmp.resolve("conf.md");
        CommandsTest.Result r = kiln("onnx-test", "--markdown", md.toString(), NODE.resolve("test_abs").toString(),
                NODE.resolve("test_adagrad").toString(), NODE.resolve("test_leakyrelu").toString()).ok();
        assertThat(r.out().lines().toList()).containsExactly("PASS test_abs",
                "PASS test_adagrad", "PASS test_leakyrelu", "3 passed, 0 failed, 0 skipped");
        assertThat(Files.readString(md)).startsWith("# ONNX conformance").contains("| Abs | 1 | 1 | 0 | 0 |").contains("| Adagrad | 1 | 1 | 0 | 0 |");
    }

    @Test
    void onnxTestFailsWithTheWorstMismatchAndExitStatus1() throws IOException {
        // a copy of test_abs whose expected output is the input: abs differs wherever the input is negative
        Path c = tmp.resolve("suite/test_abs_wrong");
        Files.createDirectories(c.resolve("test_data_set_0"));
        Path src = NODE.resolve("test_abs");
        Files.copy(src.resolve("model.onnx"), c.resolve("model.onnx"));
        Files.copy(src.resolve("test_data_set_0/input_0.pb"), c.resolve("test_data_set_0/input_0.pb"));
        Files.copy(src.resolve("test_data_set_0/input_0.pb"), c.resolve("test_data_set_0/output_0.pb"));
        CommandsTest.Result r = kiln("onnx-test", "--device", "INTERP", tmp.resolve("suite").toString());
        assertThat(r.code()).isEqualTo(1);
        List<String> lines = r.out().lines().toList();
        assertThat(lines.getFirst()).startsWith("FAIL test_abs_wrong: output 0 'y', index [").contains(": expected -").contains("elements differ)");
        assertThat(lines.getLast()).isEqualTo("0 passed, 1 failed, 0 skipped");
    }

    @Test
    void onnxTestBadInput() throws IOException {
        Path missing = tmp.resolve("nope");
        kiln("onnx-test", missing.toString()).badInput("kiln onnx-test: DIR: expected a folder of ONNX test cases, got '" + missing + "' (no such folder)");
        Files.createDirectories(tmp.resolve("empty"));
        kiln("onnx-test", tmp.resolve("empty").toString()).badInput("no ONNX test case");
        kiln("onnx-test").badInput("Missing required parameter: 'DIR'");
        kiln("onnx-test", "--device", "NOPE", NODE.resolve("test_abs").toString()).badInput("unknown device 'NOPE'");
    }

    // ------------------------------------------------------------------------------------ bad input

    @Test
    void truncatedOrMalformedModelIsOneLineAndWritesNothing() throws IOException {
        byte[] bytes = Files.readAllBytes(CONV.resolve("model.onnx"));
        Path truncated = tmp.resolve("truncated.onnx");
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length / 2));
        Path out = tmp.resolve("out");
        kiln("run", truncated.toString(), "--random-inputs", "--output-dir", out.toString())
                .badInput("kiln run: " + truncated + ": not a valid ONNX ModelProto (", "truncated");
        Path garbage = tmp.resolve("garbage.onnx");
        Files.writeString(garbage, "garbage!");
        kiln("profile", garbage.toString(), "--random-inputs", "--output-dir", out.toString()).badInput(garbage + ": not a valid ONNX ModelProto");
        Path empty = tmp.resolve("empty.onnx");
        Files.write(empty, new byte[0]);
        kiln("bench", empty.toString(), "--random-inputs").badInput(empty + ": the model has no graph");
        assertThat(out).doesNotExist();
    }

    @Test
    void missingModelFile() {
        Path missing = tmp.resolve("missing.onnx");
        kiln("run", missing.toString(), "--random-inputs").badInput("got '" + missing + "' (no such file)");
    }

    @Test
    void unknownInputNameWrongShapeOrDtype() throws IOException {
        String model = CONV.resolve("model.onnx").toString();
        Path x = npyOf(CONV, 0), w = npyOf(CONV, 1);
        Path out = tmp.resolve("out");
        kiln("run", model, "--input", "nope=" + x, "--input", "W=" + w, "--output-dir", out.toString())
                .badInput("--input nope=" + x + ": the model has no input 'nope'; its inputs are [x f32 [1, 1, 7, 5], W f32 [1, 1, 3, 3]]");
        Path shape = tmp.resolve("shape.npy");
        Npy.write(shape, Tensor.zeros(1, 1, 7, 6));
        kiln("run", model, "--input", "x=" + shape, "--input", "W=" + w, "--output-dir", out.toString())
                .badInput("input 'x': expected f32 [1, 1, 7, 5], " + shape + " holds f32 [1, 1, 7, 6]");
        Path dtype = tmp.resolve("dtype.npy");
        Npy.write(dtype, Tensor.zeros(DType.F64, 1, 1, 7, 5));
        kiln("run", model, "--input", "x=" + dtype, "--input", "W=" + w, "--output-dir", out.toString())
                .badInput("input 'x': expected f32 [1, 1, 7, 5], " + dtype + " holds f64 [1, 1, 7, 5]");
        assertThat(out).doesNotExist();
        assertThat(filesIn(tmp)).containsExactly("dtype.npy", "input_0.npy", "input_1.npy", "shape.npy");
    }

    @Test
    void unsupportedOperatorIsOneLine() throws IOException {
        // test_abs with its node's operator renamed to one ONNX does not have (every operator of the conformance cases runs)
        ModelProto.Builder m = ModelProto.parseFrom(Files.readAllBytes(NODE.resolve("test_abs/model.onnx"))).toBuilder();
        m.getGraphBuilder().setNode(0, m.getGraph().getNode(0).toBuilder().setOpType("Absolutely").setName("abs_node"));
        Path model = Files.createDirectories(tmp.resolve("m")).resolve("model.onnx");
        Files.write(model, m.build().toByteArray());
        kiln("run", model.toString(), "--random-inputs", "--output-dir", tmp.resolve("o").toString())
                .badInput("unsupported ONNX op Absolutely (domain ai.onnx, opset 13) at node 'abs_node': Kiln has no implementation of this operator");
        assertThat(filesIn(tmp.resolve("m"))).containsExactly("model.onnx");
        assertThat(tmp.resolve("o")).doesNotExist();
    }
}
