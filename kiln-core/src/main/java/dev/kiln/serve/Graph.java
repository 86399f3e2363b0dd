package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A computation with named inputs and parameters, built with the {@link Tensor} API and compiled by
 * {@link Session#compile}. Inputs are fed on every run; parameters (weights) are set once and kept.
 *
 * <pre>{@code
 * Graph g = new Graph();
 * Tensor x = g.input("x", DType.F32, Shape.of(1, 64));
 * Tensor w = g.param("w", DType.F32, Shape.of(64, 10));
 * g.outputs(x.matmul(w).relu());
 * try (CompiledGraph c = Session.on("CPU").compile(g)) { ... }
 * }</pre>
 *
 * <p>The tensors {@link #input} and {@link #param} return are placeholders: they have no data of their
 * own, so realising them (or anything computed from them) outside a compiled graph is an error. A graph
 * is device-independent; it can be compiled any number of times, for any devices. Constants it reads
 * (e.g. {@code Tensor.of(...)}) are copied to the compiled graph's device. Not thread-safe while being
 * built.
 */
public final class Graph {
    /** A declared input or parameter: the placeholder's host function only ever reports misuse. */
    record Placeholder(Graph graph, TensorSpec spec, boolean param) implements CustomFunction.Input {
        @Override
        public void apply(List<MemorySegment> inputs, MemorySegment output) {
            throw new IllegalStateException((param ? "param" : "input") + " '" + spec.name()
                    + "' is a graph placeholder with no data: compile the graph (Session.compile) and run it");
        }
    }

    private final Map<String, Placeholder> declared = new LinkedHashMap<>();
    private final Map<String, Tensor> tensors = new LinkedHashMap<>();
    private List<Tensor> outputs;

    /** An empty graph. */
    public Graph() {}

    /**
     * Declares an input fed by name on every run.
     *
     * @throws IllegalArgumentException if the name is taken, blank, or the dtype is packed
     */
    public Tensor input(String name, DType dtype, Shape shape) { return declare(name, dtype, shape, false); }

    /** As {@link #input(String, DType, Shape)} with the dimensions given directly. */
    public Tensor input(String name, DType dtype, int... dims) { return input(name, dtype, Shape.of(dims)); }

    /**
     * Declares a parameter (a weight): set with {@link CompiledGraph#setParam} or
     * {@link CompiledGraph#setParamTyped} (packed Q8_0/Q4_0 bytes are dequantised into a float param), kept
     * between runs and shared by {@link CompiledGraph#copy() replicas}.
     *
     * @throws IllegalArgumentException if the name is taken, blank, or the dtype is packed
     */
    public Tensor param(String name, DType dtype, Shape shape) { return declare(name, dtype, shape, true); }

    /** As {@link #param(String, DType, Shape)} with the dimensions given directly. */
    public Tensor param(String name, DType dtype, int... dims) { return param(name, dtype, Shape.of(dims)); }

    private Tensor declare(String name, DType dtype, Shape shape, boolean param) {
        String what = param ? "param" : "input";
        Objects.requireNonNull(name, what + ": name");
        Objects.requireNonNull(dtype, what + ": dtype");
        Objects.requireNonNull(shape, what + ": shape");
        if (name.isBlank()) throw new IllegalArgumentException(what + ": name must not be blank");
        Placeholder prior = declared.get(name);
        if (prior != null) {
            throw new IllegalArgumentException(what + ": name '" + name + "' is already declared as " + (prior.param() ? "param " : "input ")
                    + prior.spec());
        }
        if (dtype.isPacked()) {
            throw new IllegalArgumentException(what + " '" + name + "': packed dtype " + dtype + " holds weights only; declare a float "
                    + what + " and set it with setParamTyped(name, bytes, " + dtype + ") to dequantise it");
        }
        Placeholder p = new Placeholder(this, new TensorSpec(name, dtype, shape), param);
        Tensor t = Tensor.custom(what + ":" + name, dtype, shape.toArray(), p);
        for (int a = 0; a < shape.rank(); a++) if (shape.variable(a) != null) t = t.withSymbolicDim(a, shape.variable(a));
        declared.put(name, p);
        tensors.put(name, t);
        return t;
    }

    /**
     * Fixes the outputs, in the order runs return them. Called once.
     *
     * @throws IllegalStateException    if the outputs were already fixed
     * @throws IllegalArgumentException if there are none, or a packed-dtype tensor is given
     */
    public Graph outputs(Tensor... outs) {
        if (outputs != null) throw new IllegalStateException("outputs: the graph's outputs are already fixed (" + outputs.size() + " outputs)");
        if (outs.length == 0) throw new IllegalArgumentException("outputs: a graph needs at least one output");
        List<Tensor> list = new ArrayList<>();
        for (int i = 0; i < outs.length; i++) list.add(Objects.requireNonNull(outs[i], "outputs: output " + i));
        outputs = List.copyOf(list);
        return this;
    }

    /** The declared inputs, in declaration order. */
    public List<TensorSpec> inputs() { return specs(false); }

    /** The declared parameters, in declaration order. */
    public List<TensorSpec> params() { return specs(true); }

    private List<TensorSpec> specs(boolean param) {
        return declared.values().stream().filter(p -> p.param() == param).map(Placeholder::spec).toList();
    }

    /**
     * The tensor declared as {@code name}.
     *
     * @throws IllegalArgumentException if no input or param has that name (the known names are listed)
     */
    public Tensor tensor(String name) {
        Tensor t = tensors.get(name);
        if (t == null) throw new IllegalArgumentException("graph has no input or param '" + name + "'; declared: " + declared.keySet());
        return t;
    }

    /** The outputs' graph nodes, in order. */
    List<UOp> outputNodes() {
        if (outputs == null) throw new IllegalStateException("compile: the graph has no outputs; call outputs(...) first");
        return outputs.stream().map(Tensor::uop).toList();
    }

    /** The placeholder of a node, if it is one of any graph's inputs or params. */
    static Placeholder placeholderOf(UOp node) {
        return node.op() == Op.CUSTOM && node.arg() instanceof CustomFunction f && f.body() instanceof Placeholder p ? p : null;
    }

    /** The placeholders declared here, in declaration order. */
    List<Placeholder> placeholders() { return List.copyOf(declared.values()); }
}
