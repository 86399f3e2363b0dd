package dev.kiln.catalogue;

import dev.kiln.testing.BlockingStep;
import dev.kiln.Tensor;
import dev.kiln.runtime.ConcurrentUseException;
import dev.kiln.serve.CompileOptions;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Graph;
import dev.kiln.serve.OutputSlots;
import dev.kiln.serve.Session;
import dev.kiln.serve.TypedValues;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static dev.kiln.catalogue.BadInput.bad;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The serving API's bad-input catalogue (issue 13): graphs, sessions and compiled graphs (wrong names, lengths, dtypes,
 * variables out of range, handles, replicas, use after close, a second thread entering a run). One row per case, checked
 * by {@link BadInput#check()}. Graphs compile for INTERP, which offers every capability these rows need and compiles
 * nothing.
 */
class ServingBadInputCatalogueTest {
    private static final Class<IllegalArgumentException> IAE = IllegalArgumentException.class;
    private static final Class<IllegalStateException> ISE = IllegalStateException.class;
    private static final Session INTERP = Session.on("INTERP");

    /** x[2, 4] → (relu(x w1 + b1) w2, its row sums): params w1[4, 8], b1[8], w2[8, 3], all set. */
    private static CompiledGraph mlp;
    /** The same graph with no param set. */
    private static CompiledGraph unset;
    /** A replica of {@link #mlp}. */
    private static CompiledGraph replica;
    /** A graph with a variable n in [1, 8] and an input of symbolic length seq in [1, 16]. */
    private static CompiledGraph symbolic;
    /** A graph closed at once. */
    private static CompiledGraph closed;

    private static Graph mlpGraph() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 2, 4);
        Tensor h = x.matmul(g.param("w1", DType.F32, 4, 8)).add(g.param("b1", DType.F32, 8)).relu();
        return g.outputs(h.matmul(g.param("w2", DType.F32, 8, 3)), h.sum(1));
    }

    @BeforeAll
    static void fixtures() {
        mlp = INTERP.compile(mlpGraph());
        mlp.setParam("w1", new float[32]);
        mlp.setParam("b1", new float[8]);
        mlp.setParam("w2", new float[24]);
        unset = INTERP.compile(mlpGraph());
        replica = mlp.copy();
        Graph s = new Graph();
        Tensor t = s.input("t", DType.F32, Shape.symbolic(new Variable("seq", 1, 16), 4));
        Tensor n = Tensor.variable(new Variable("n", 1, 8));
        s.outputs(t.sum(1), Tensor.where(Tensor.arange(8).lt(n), Tensor.ones(8), 0.0f).sum());
        symbolic = INTERP.compile(s);
        closed = INTERP.compile(mlpGraph());
        closed.close();
    }

    @AfterAll
    static void close() {
        replica.close();
        mlp.close();
        unset.close();
        symbolic.close();
    }

    private static Map<String, float[]> x(int n) { return Map.of("x", new float[n]); }

    static Stream<BadInput> cases() {
        return Stream.of(
                // ---- building graphs
                bad("input: a name declared twice", IAE, () -> {
                    Graph g = new Graph();
                    g.input("x", DType.F32, 2);
                    g.input("x", DType.F32, 3);
                }, "input: name 'x' is already declared as input x: f32[2]"),
                bad("param: the name of an input", IAE, () -> {
                    Graph g = new Graph();
                    g.input("x", DType.F32, 2);
                    g.param("x", DType.F32, 2);
                }, "param: name 'x' is already declared as input x: f32[2]"),
                bad("param: a packed dtype", IAE, () -> new Graph().param("w", DType.Q4_0, 32),
                        "param 'w': packed dtype q4_0 holds weights only; declare a float param and set it with setParamTyped(name, bytes, q4_0) to dequantise it"),
                bad("input: a blank name", IAE, () -> new Graph().input("  ", DType.F32, 1), "input: name must not be blank"),
                bad("input: a negative dim", IAE, () -> new Graph().input("x", DType.F32, 2, -4),
                        "shape [2, -4] has negative dimension -4 at axis 1"),
                bad("tensor: an undeclared name", IAE, () -> new Graph().tensor("y"), "graph has no input or param 'y'; declared: []"),
                bad("outputs: none", IAE, () -> new Graph().outputs(), "outputs: a graph needs at least one output"),
                bad("outputs: fixed twice", ISE, () -> {
                    Graph g = new Graph();
                    Tensor x = g.input("x", DType.F32, 2);
                    g.outputs(x.add(1));
                    g.outputs(x.add(2));
                }, "outputs: the graph's outputs are already fixed (1 outputs)"),
                bad("compile: a graph without outputs", ISE, () -> INTERP.compile(new Graph()),
                        "compile: the graph has no outputs; call outputs(...) first"),
                bad("compile: an output reading another graph's input", IAE, () -> {
                    Graph other = new Graph(), g = new Graph();
                    Tensor y = other.input("y", DType.F32, 2);
                    g.outputs(g.input("x", DType.F32, 2).add(y));
                    INTERP.compile(g);
                }, "compile: an output reads input 'y' of another graph"),
                bad("realising a placeholder outside a compiled graph", ISE, () -> new Graph().input("x", DType.F32, 2).add(1).toFloatArray(),
                        "input 'x' is a graph placeholder with no data: compile the graph (Session.compile) and run it"),
                bad("Session.on: an unknown device", IAE, () -> Session.on("NOPE"), "unknown device 'NOPE'"),
                bad("Session.on: a malformed name", IAE, () -> Session.on("cpu::1"),
                        "device 'cpu::1' is not of the form KIND or KIND:INDEX (e.g. CPU, CUDA:1)"),
                bad("CompileOptions: no staging slot", IAE, () -> new CompileOptions(0), "CompileOptions: stagingSlots must be >= 1, got 0"),

                // ---- inputs and params
                bad("run: an unknown input", IAE, () -> mlp.run(Map.of("z", new float[8])), "run: unknown input 'z'; inputs are [x: f32[2, 4]]"),
                bad("run: a param given as input", IAE, () -> mlp.run(Map.of("w1", new float[32])),
                        "run: unknown input 'w1' ('w1' is a param: set it with setParam); inputs are [x: f32[2, 4]]"),
                bad("run: too few values", IAE, () -> mlp.run(x(7)), "run: input 'x' (f32[2, 4]) expects 8 values, got 7"),
                bad("run: too many values", IAE, () -> mlp.run(x(9)), "run: input 'x' (f32[2, 4]) expects 8 values, got 9"),
                bad("run: no inputs", IAE, () -> mlp.run(Map.of()),
                        "run: missing inputs [x: f32[2, 4]]; every input not bound to a handle must be given"),
                bad("run: a null array", IAE, () -> {
                    Map<String, float[]> m = new HashMap<>();
                    m.put("x", null);
                    mlp.run(m);
                }, "run: input 'x' has no values"),
                bad("runRaw: too few values", IAE, () -> mlp.runRaw(x(1)), "runRaw: input 'x' (f32[2, 4]) expects 8 values, got 1"),
                bad("setParam: an unknown param", IAE, () -> mlp.setParam("w9", new float[1]),
                        "setParam: unknown param 'w9'; params are [w1: f32[4, 8], b1: f32[8], w2: f32[8, 3]]"),
                bad("setParam: an input's name", IAE, () -> mlp.setParam("x", new float[8]),
                        "setParam: unknown param 'x' ('x' is an input: feed it to run); params are [w1: f32[4, 8], b1: f32[8], w2: f32[8, 3]]"),
                bad("setParam: too few values", IAE, () -> mlp.setParam("b1", new float[7]), "setParam: param 'b1' (f32[8]) expects 8 values, got 7"),
                bad("setParam: too few bytes", IAE, () -> mlp.setParam("b1", MemorySegment.ofArray(new byte[31])),
                        "setParam: param 'b1' (f32[8]) expects 32 bytes, got 31"),
                bad("setParamTyped: another dtype", IAE, () -> mlp.setParamTyped("b1", new byte[32], DType.I32),
                        "setParamTyped: param 'b1' is f32, given i32 bytes (give its own dtype, or packed q8_0/q4_0 for a float param)"),
                bad("setParamTyped: packed blocks that do not fit", IAE, () -> mlp.setParamTyped("b1", new byte[34], DType.Q8_0),
                        "setParamTyped: param 'b1' (f32[8]) has 8 values, not a whole number of q8_0 blocks of 32"),
                bad("runSlots: too many inputs", IAE, () -> mlp.runSlots(new float[8], new float[8]),
                        "runSlots: expects 1 inputs in declaration order [x: f32[2, 4]] (null for a handle), got 2"),
                bad("runSlots: no inputs", IAE, () -> mlp.runSlots(),
                        "runSlots: expects 1 inputs in declaration order [x: f32[2, 4]] (null for a handle), got 0"),
                bad("runSlots: a null slot", IAE, () -> mlp.runSlots((float[]) null), "runSlots: input 0 'x' (f32[2, 4]) is null"),
                bad("runSlots: too few values", IAE, () -> mlp.runSlots(new float[3]), "runSlots: input 'x' (f32[2, 4]) expects 8 values, got 3"),
                bad("runTyped: an unknown input", IAE, () -> mlp.runTyped(Map.of("q", TypedValues.of(DType.F32, 1))),
                        "runTyped: unknown input 'q'; inputs are [x: f32[2, 4]]"),
                bad("runTyped: another dtype", IAE, () -> mlp.runTyped(Map.of("x", TypedValues.of(DType.F16, new float[8]))),
                        "runTyped: input 'x' is f32, given f16 values"),
                bad("runTyped: too few bytes", IAE, () -> mlp.runTyped(Map.of("x", new TypedValues(DType.F32, new byte[12]))),
                        "runTyped: input 'x' (f32[2, 4]) expects 32 bytes of f32 (8 values), got 12"),
                bad("runTyped: a null value", IAE, () -> {
                    Map<String, TypedValues> m = new HashMap<>();
                    m.put("x", null);
                    mlp.runTyped(m);
                }, "runTyped: input 'x' has no values"),
                bad("run: params never set", ISE, () -> unset.run(x(8)), "run: params never set: [w1, b1, w2] (setParam before running)"),
                bad("runSlots: params never set", ISE, () -> unset.runSlots(new float[8]),
                        "runSlots: params never set: [w1, b1, w2] (setParam before running)"),
                bad("setParam on a replica", ISE, () -> replica.setParam("b1", new float[8]),
                        "setParam: param 'b1' is shared read-only with the graph this replica was copied from; set it there"),
                bad("OutputSlots.offset: an output past the end", IndexOutOfBoundsException.class, () -> slots().offset(2),
                        "output 2 of a graph with 2 outputs"),
                bad("OutputSlots.length: a negative output", IndexOutOfBoundsException.class, () -> slots().length(-1),
                        "output -1 of a graph with 2 outputs"),
                bad("runPipelined: a bad second set", IAE, () -> mlp.runPipelined(List.of(x(8), x(5))),
                        "runPipelined: input set 1: runPipelined: input 'x' (f32[2, 4]) expects 8 values, got 5"),
                bad("commitNoWait: an unknown input", IAE, () -> mlp.commitNoWait(Map.of("nope", new float[1])),
                        "commitNoWait: unknown input 'nope'; inputs are [x: f32[2, 4]]"),

                // ---- variables and active extents
                bad("setVariable: an unknown variable", IAE, () -> symbolic.setVariable("m", 1),
                        "setVariable: the graph has no variable 'm'; its variables are [seq[1, 16], n[1, 8]]"),
                bad("setVariable: above the maximum", IAE, () -> symbolic.setVariable("n", 9), "variable 'n' bound to 9, outside its range [1, 8]"),
                bad("setVariable: below the minimum", IAE, () -> symbolic.setVariable("n", 0), "variable 'n' bound to 0, outside its range [1, 8]"),
                bad("setVariable: a graph without variables", IAE, () -> mlp.setVariable("n", 1),
                        "setVariable: the graph has no variable 'n'; its variables are []"),
                bad("run: a variable never set", ISE, () -> {
                    try (CompiledGraph c = INTERP.compile(symbolicGraph())) {
                        c.run(Map.of("t", new float[64]));
                    }
                }, "run: variables without a value: [n] (setVariable before running)"),
                bad("setActiveExtent: an actual length of 0", IAE, () -> symbolic.setActiveExtent(0, 16),
                        "setActiveExtent: actual 0 is outside [1, 16] of 'seq'"),
                bad("setActiveExtent: past the upper bound", IAE, () -> symbolic.setActiveExtent(17, 16),
                        "setActiveExtent: actual 17 is outside [1, 16] of 'seq'"),
                bad("setActiveExtent: an upper bound it was not compiled at", IAE, () -> symbolic.setActiveExtent(4, 32),
                        "setActiveExtent: the graph was compiled at extent 16 of 'seq', given upper 32"),
                bad("clearActiveExtent: a graph without symbolic inputs", ISE, () -> mlp.clearActiveExtent(),
                        "clearActiveExtent: the graph's inputs have no symbolic axis; declare the bucketed axis with a Variable (Shape.symbolic) so kernels can stop at the active extent"),

                // ---- handles
                bad("bindHandle: an unknown input", IAE, () -> mlp.bindHandle("kv", new float[1]),
                        "bindHandle: unknown input 'kv'; a handle binds an input, inputs are [x: f32[2, 4]]"),
                bad("bindHandle: too few values", IAE, () -> withHandle(c -> c.bindHandle("x", new float[3])),
                        "bindHandle: handle 'x' has 3 values, input 'x' (f32[2, 4]) holds 8"),
                bad("readHandle: nothing bound", IAE, () -> mlp.readHandle("x"), "readHandle: no handle 'x' is bound; bound handles are []"),
                bad("setHandleFeed: nothing bound", IAE, () -> mlp.setHandleFeed("x", 0),
                        "setHandleFeed: no handle 'x' is bound; bound handles are []"),
                bad("clearHandleFeed: nothing bound", IAE, () -> mlp.clearHandleFeed("x"),
                        "clearHandleFeed: no handle 'x' is bound; bound handles are []"),
                bad("setHandleFeed: an output past the end", IAE, () -> withHandle(c -> c.setHandleFeed("x", 5)),
                        "setHandleFeed: output 5 does not exist; the graph has 2 outputs [output0: f32[2, 3], output1: f32[2]]"),
                bad("setHandleFeed: an output of another shape", IAE, () -> withHandle(c -> c.setHandleFeed("x", 1)),
                        "setHandleFeed: output 1 (f32[2]) cannot feed handle 'x' (f32[2, 4]): dtype and size must match"),
                bad("runFeedHandle: an output past the end", IAE, () -> withHandle(c -> c.runFeedHandle(Map.of(), "x", 2)),
                        "runFeedHandle: output 2 does not exist; the graph has 2 outputs [output0: f32[2, 3], output1: f32[2]]"),
                bad("run: giving an input bound to a handle", IAE, () -> withHandle(c -> c.run(x(8))),
                        "run: input 'x' is bound to a handle; the run reads the handle, so do not give it"),
                bad("runSlots: values for a bound handle", IAE, () -> withHandle(c -> c.runSlots(new float[8])),
                        "runSlots: input 0 'x' is bound to a handle; pass null"),

                // ---- use after close
                bad("run after close", ISE, () -> closed.run(x(8)), "compiled graph is closed"),
                bad("runRaw after close", ISE, () -> closed.runRaw(x(8)), "compiled graph is closed"),
                bad("runSlots after close", ISE, () -> closed.runSlots(new float[8]), "compiled graph is closed"),
                bad("runTyped after close", ISE, () -> closed.runTyped(Map.of()), "compiled graph is closed"),
                bad("setParam after close", ISE, () -> closed.setParam("b1", new float[8]), "compiled graph is closed"),
                bad("setVariable after close", ISE, () -> closed.setVariable("n", 1), "compiled graph is closed"),
                bad("copy after close", ISE, () -> closed.copy(), "compiled graph is closed"),
                bad("arena after close", ISE, () -> closed.arena(), "compiled graph is closed"),
                bad("hasHandle after close", ISE, () -> closed.hasHandle("x"), "compiled graph is closed"),
                bad("bindHandle after close", ISE, () -> closed.bindHandle("x", new float[8]), "compiled graph is closed"),
                bad("readHandle after close", ISE, () -> closed.readHandle("x"), "compiled graph is closed"),
                bad("commitNoWait after close", ISE, () -> closed.commitNoWait(x(8)), "compiled graph is closed"),
                bad("runPipelined after close", ISE, () -> closed.runPipelined(List.of(x(8))), "compiled graph is closed"),
                bad("syncPending after close", ISE, () -> closed.syncPending(), "compiled graph is closed"),

                // ---- a second thread entering a run
                bad("run from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(c -> c.run(Map.of("x", new float[4]))),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (CompiledGraph.copy())"),
                bad("setParam from a second thread during a run", ConcurrentUseException.class,
                        () -> whileRunning(c -> c.setParam("w", new float[4])),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (CompiledGraph.copy())"),
                bad("copy from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(CompiledGraph::copy),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (CompiledGraph.copy())"),
                bad("close from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(CompiledGraph::close),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (CompiledGraph.copy())"));
    }

    private static Graph symbolicGraph() {
        Graph s = new Graph();
        Tensor t = s.input("t", DType.F32, Shape.symbolic(new Variable("seq", 1, 16), 4));
        Tensor n = Tensor.variable(new Variable("n", 1, 8));
        return s.outputs(t.sum(1), Tensor.where(Tensor.arange(8).lt(n), Tensor.ones(8), 0.0f).sum());
    }

    private static OutputSlots slots() { return mlp.runSlots(new float[8]); }

    /** {@code call} on a fresh copy of the MLP whose input x is bound to a handle. */
    private static void withHandle(Consumer<CompiledGraph> call) {
        try (CompiledGraph c = mlp.copy()) {
            c.bindHandle("x", new float[8]);
            call.accept(c);
        }
    }

    /** {@code call} on a graph while another thread is inside a run of it (a host step that waits). */
    private static void whileRunning(Consumer<CompiledGraph> call) throws Throwable {
        BlockingStep step = new BlockingStep();
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 4);
        Tensor w = g.param("w", DType.F32, 4);
        g.outputs(step.over(x).add(w));
        CompiledGraph c = INTERP.compile(g);
        c.setParam("w", new float[4]);
        Thread runner = Thread.ofPlatform().name("catalogue-runner").start(() -> c.run(Map.of("x", new float[4])));
        try {
            assertThat(step.awaitInside()).as("the runner entered the graph").isTrue();
            call.accept(c);
        } finally {
            step.release();
            runner.join(10_000);
            c.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void failsTypedOnOneLine(BadInput c) {
        c.check();
    }

    @Test
    void theCatalogueHoldsDistinctCases() {
        BadInput.assertDistinct(cases().toList(), 70);
    }
}
