package dev.kiln.onnx;

import dev.kiln.LoopLimitException;
import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.IndexOutOfRangeException;
import dev.kiln.runtime.MemoryBudget;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Builds one run of a model: walks the nodes in order and applies each operator to the tensors of its inputs.
 * A node whose inputs are all constants (initializers, Constant nodes, shapes, earlier folded nodes) and small
 * is folded: computed at once on the INTERP device, so that shape computations feed the operators that need
 * values at build time (Reshape, Slice, Expand, ...). Everything else stays lazy on the run device.
 */
final class GraphBuilder {
    /** Inputs larger than this are not folded: the work is left to the run device. */
    private static final long FOLD_LIMIT = 1 << 16;
    /**
     * Outputs larger than this are not folded either (the node is built again, lazily, on the run device): INTERP would
     * take seconds and most of the heap over a value of 10^8 elements that small constants describe (OneHot, Expand,
     * ConstantOfShape, ...), and no operator needs a value that large at build time.
     */
    static final long FOLD_OUTPUT_LIMIT = 1 << 22;

    private final OnnxGraph model;
    private final Device device;
    private final Map<String, Tensor> values = new HashMap<>();
    private final Set<String> constants = new HashSet<>();
    /**
     * The sequences and optionals defined so far ({@link OnnxValue}), apart from the tensors: most graphs have none, and
     * the tensor path then only checks that this map is empty.
     */
    private final Map<String, OnnxValue> hosts = new HashMap<>();
    /** The Conv weights the batch-norm fold may scale in place ({@link ConvBatchNormFolding#weightsScaledInPlace}). */
    private Set<String> scaledInPlace = Set.of();
    /** Constants already copied to a device, by name and device. */
    private final Map<String, Tensor> placed = new HashMap<>();
    /**
     * False while a {@link OnnxPlan} is built: its inputs are buffers filled by each later bind, so a value computed from
     * them has no elements yet, and an operator that needs them now (NonZero, NonMaxSuppression, a Reshape to a computed
     * shape, ...) would bake in the buffers' zeros.
     */
    private boolean inputValuesKnown = true;
    /** While a plan is built: the rows it reserves for loops of unknown length, shared with every nested builder; else null. */
    private PlanCapacities capacities;

    /** A builder of {@code model}'s main graph. */
    GraphBuilder(OnnxModel model, Device device) { this(OnnxGraph.of(model), device); }

    /** A builder of {@code graph} (a main graph, or a subgraph an operator builds) on {@code device}. */
    GraphBuilder(OnnxGraph graph, Device device) {
        this.model = graph;
        this.device = device;
    }

    /**
     * A builder of {@code graph}, a subgraph an operator of this graph builds on {@code device}: like this builder, it
     * may read the elements of values computed from the graph's inputs only where this one may (not while a plan is built).
     */
    GraphBuilder nested(OnnxGraph graph, Device device) {
        GraphBuilder b = new GraphBuilder(graph, device);
        b.inputValuesKnown = inputValuesKnown;
        b.capacities = capacities;
        return b;
    }

    /** A builder of {@code model}'s main graph for a plan: operators may not read its inputs' elements while it is built. */
    static GraphBuilder forPlan(OnnxModel model, Device device, PlanCapacities capacities) {
        GraphBuilder b = new GraphBuilder(model, device);
        b.inputValuesKnown = false;
        b.capacities = capacities;
        return b;
    }

    /** The rows the plan being built reserves for loops of unknown length; null when no plan is built. */
    PlanCapacities capacities() { return capacities; }

    /** Builds the graph on {@code inputs} (by name); its outputs, in order, on the builder's device. */
    List<Tensor> build(Map<String, Tensor> inputs) { return build(inputs, Map.of()); }

    /**
     * Builds the graph on {@code inputs} and {@code outerConstants}, constants of the graphs around a subgraph that it
     * reads (they stay constants in it: folded, and read at build time where an operator needs values).
     */
    List<Tensor> build(Map<String, Tensor> inputs, Map<String, Tensor> outerConstants) {
        List<Tensor> out = new ArrayList<>();
        List<OnnxValue> values = buildValues(inputs, outerConstants, Map.of());
        for (int k = 0; k < values.size(); k++) {
            if (!(values.get(k) instanceof OnnxValue.TensorValue(Tensor t))) {
                // reported by the operator whose subgraph this is (Scan, Loop) as an UnsupportedOnnxOpException naming it
                throw new UnsupportedOperationException("output '" + model.outputs().get(k) + "' of " + model.source() + " is "
                        + values.get(k).describe() + "; this graph's outputs must be tensors");
            }
            out.add(t);
        }
        return out;
    }

    /**
     * Builds the graph on tensor {@code inputs}, {@code outerConstants} and {@code hostInputs} (sequences and optionals,
     * of the graph's inputs or read from the graphs around a subgraph); its outputs, in order, on the builder's device.
     */
    List<OnnxValue> buildValues(Map<String, Tensor> inputs, Map<String, Tensor> outerConstants, Map<String, OnnxValue> hostInputs) {
        hosts.putAll(hostInputs);
        outerConstants.forEach((name, t) -> {
            values.put(name, t);
            constants.add(name);
        });
        model.initializers().forEach((name, t) -> {
            values.put(name, t);
            constants.add(name);
        });
        inputs.forEach((name, t) -> {
            values.put(name, t);
            constants.remove(name); // a graph input overrides an initializer of the same name
        });
        Map<Integer, Node> folds = ConvBatchNormFolding.pairs(model.nodes(), model.outputs(), model.opsetFor(""));
        // (an outer constant or a graph input could shadow a ConstantOfShape's name only in an invalid graph: the validator refuses it)
        scaledInPlace = ConvBatchNormFolding.weightsScaledInPlace(model.nodes(), model.outputs(), folds);
        Set<Integer> folded = new HashSet<>();
        for (Node n : model.nodes()) {
            if (folded.contains(n.index())) continue;
            Node bn = folds.get(n.index());
            Node conv = bn == null ? null : foldedConv(n, bn);
            if (conv != null) folded.add(bn.index());
            evaluate(conv != null ? conv : n);
        }
        List<OnnxValue> out = new ArrayList<>();
        for (String o : model.outputs()) {
            OnnxValue h = hosts.get(o);
            // a constant output (a branch's initializer) placed on the device now, as constants are read, not copied by each run
            out.add(h == null ? new OnnxValue.TensorValue(on(o, device)) : HostValues.to(h, device));
        }
        return out;
    }

    /**
     * Value {@code name} on device {@code d}. A constant (an initializer or a folded node) is copied there once,
     * while the graph is built (a lazy copy would be a step of every run: ResNet-50's folded batch-norm
     * parameters, 239 copies per run), and marked {@linkplain Tensor#asConstant() constant}, so plans may pack
     * weights once.
     */
    private Tensor on(String name, Device d) {
        Tensor t = values.get(name);
        if (t == null) {
            // the main graph's names are checked when the model loads; a subgraph's reads of outer names only here
            throw new OnnxFormatException(model.source(), "value '" + name + "' is read but no input, initializer or earlier node defines it"
                    + (hosts.containsKey(name) ? " as a tensor (it is a sequence or optional)" : ""));
        }
        if (!constants.contains(name)) return t.to(d);
        return placed.computeIfAbsent(name + "@" + d.spec(), k -> (t.device() == d ? t : t.to(d)).realize().asConstant());
    }

    /**
     * {@code conv} with {@code bn} folded in ({@link ConvBatchNormFolding}): a Conv node writing the batch norm's
     * output from new constant weights and bias, or null when the operands do not fold.
     */
    private Node foldedConv(Node conv, Node bn) {
        if (!ConvBatchNormFolding.operandsConstant(conv, bn, constants::contains)) return null;
        // the constants as they are: fold reads their values on the host, nothing needs placing on a device first
        List<String> in = conv.inputs(), p = bn.inputs();
        Tensor b = in.size() > 2 && !in.get(2).isEmpty() ? values.get(in.get(2)) : null;
        Tensor[] wb = ConvBatchNormFolding.fold(values.get(in.get(1)), b, values.get(p.get(1)), values.get(p.get(2)), values.get(p.get(3)),
                values.get(p.get(4)), bn.attrs().f("epsilon", 1e-5), scaledInPlace.contains(in.get(1)));
        if (wb == null) return null;
        // names no ONNX value can have (they are not valid identifiers of a file's graph, and are never looked up by one)
        String weights = "\0kiln:folded_weights:" + bn.outputs().getFirst(), bias = "\0kiln:folded_bias:" + bn.outputs().getFirst();
        values.put(weights, wb[0]);
        values.put(bias, wb[1]);
        constants.add(weights);
        constants.add(bias);
        return new Node(conv.index(), conv.opType(), conv.domain(), conv.name(), List.of(in.getFirst(), weights, bias),
                List.of(bn.outputs().getFirst()), conv.attrs());
    }

    private void evaluate(Node n) {
        OnnxOps.Spec spec = OnnxOps.spec(n);
        if (spec.kind() == OnnxOps.Kind.HOST || spec.kind() == OnnxOps.Kind.HOST_STRUCTURE) {
            evaluateHost(n, spec);
            return;
        }
        if (StringOps.involvesStrings(n, this)) {
            // a Cast or CastLike with a string on either side: strings are host values (kept in the tensor path otherwise, folded)
            evaluateHost(n, StringOps.CAST);
            return;
        }
        if (!hosts.isEmpty() && passesHostValue(n)) return;
        boolean fold = spec.kind() != OnnxOps.Kind.NO_FOLD;
        for (String i : n.inputs()) {
            if (i.isEmpty()) continue;
            if (spec.kind() == OnnxOps.Kind.SHAPE_ONLY) {
                // a symbolic size is known only when the plan runs: Shape of it is a value of the graph, not a constant
                Tensor t = values.get(i);
                if (t != null && t.shape().isSymbolic()) fold = false;
                break;
            }
            if (!constants.contains(i) || values.get(i).numel() > FOLD_LIMIT) fold = false;
        }
        List<Tensor> outs = apply(n, spec, fold ? DeviceRegistry.get("INTERP") : device, fold);
        if (fold && outs.stream().anyMatch(t -> t != null && t.numel() > FOLD_OUTPUT_LIMIT)) {
            fold = false;
            outs = apply(n, spec, device, false);
        }
        outputs(n, outs, fold);
    }

    /**
     * Identity of a sequence or optional: the same value under the output's name. Any other tensor operator given one is
     * the model's fault, named here before it reads its inputs as tensors. True when {@code n} was Identity of one.
     */
    private boolean passesHostValue(Node n) {
        for (int k = 0; k < n.inputs().size(); k++) {
            OnnxValue h = hosts.get(n.inputs().get(k));
            if (h == null) continue;
            if (n.opType().equals("Identity") && n.outputs().size() == 1) {
                hosts.put(n.outputs().getFirst(), h);
                return true;
            }
            throw new OnnxFormatException(model.source(), n.opType() + " node '" + n.label() + "': input " + k + " ('" + n.inputs().get(k) + "') is "
                    + h.describe() + ", but " + n.opType() + " takes tensors");
        }
        return false;
    }

    /**
     * A node of a {@linkplain OnnxOps.Kind#HOST host} operator (the sequence and optional operators, If): its tensor inputs
     * on the run device and its sequences and optionals as they are ({@link OpContext#value}); never folded.
     */
    private void evaluateHost(Node n, OnnxOps.Spec spec) {
        List<Tensor> ins = new ArrayList<>();
        for (String i : n.inputs()) ins.add(i.isEmpty() || !values.containsKey(i) ? null : on(i, device));
        long opset = model.opsetFor(n.domain());
        List<OnnxValue> outs;
        try {
            outs = Tensor.withOpName(n.opType() + " node '" + n.label() + "'", () -> spec.host().apply(new OpContext(n, opset, device, ins, this, false)));
        } catch (UnsupportedOnnxOpException | OnnxFormatException | LoopLimitException e) {
            throw e; // a loop run while the graph is built that would not end names its node already
        } catch (UnsupportedOperationException e) {
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), e.getMessage());
        } catch (ArithmeticException | IllegalArgumentException e) {
            throw new OnnxFormatException(model.source(), n.opType() + " node '" + n.label() + "': " + e.getMessage(), e);
        }
        // the length of a loop's list in a prepared plan is known only when it runs: a value of the graph, not a constant
        boolean stacked = n.inputs().stream().anyMatch(i -> hosts.get(i) instanceof OnnxValue.StackedSequence);
        for (int k = 0; k < n.outputs().size(); k++) {
            String name = n.outputs().get(k);
            if (name.isEmpty()) continue;
            if (k >= outs.size() || outs.get(k) == null) {
                throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "output " + k + " ('" + name + "') is not supported");
            }
            switch (outs.get(k)) {
                case OnnxValue.TensorValue(Tensor t) when spec.kind() == OnnxOps.Kind.HOST_STRUCTURE && !stacked -> {
                    // a few elements known now (a length, a flag): a constant, like a folded node's output
                    values.put(name, t.to(DeviceRegistry.get("INTERP")).realize());
                    constants.add(name);
                }
                case OnnxValue.TensorValue(Tensor t) -> {
                    checkBudget(List.of(t));
                    values.put(name, t);
                }
                case OnnxValue h -> hosts.put(name, h);
            }
        }
    }

    /**
     * The outputs of {@code n} on {@code d} (not realized, unless the operator computes a folded output at once),
     * within the budget; {@code fold} when they are folded into constants.
     */
    private List<Tensor> apply(Node n, OnnxOps.Spec spec, Device d, boolean fold) {
        List<Tensor> ins = new ArrayList<>();
        for (String i : n.inputs()) ins.add(i.isEmpty() ? null : on(i, d));
        long opset = model.opsetFor(n.domain());
        List<Tensor> outs;
        try {
            // the node names the index checks its gathers and scatters carry into the graph (they fail when it runs)
            outs = Tensor.withOpName(n.opType() + " node '" + n.label() + "'", () -> spec.impl().apply(new OpContext(n, opset, d, ins, this, fold)));
            checkBudget(outs);
        } catch (UnsupportedOnnxOpException | OnnxFormatException e) {
            throw e; // already names what is wrong, and callers tell them apart by type
        } catch (UnsupportedOperationException e) {
            // a value known only when the model runs (a scan step's argument) where the operator needs it while building
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), e.getMessage());
        } catch (ArithmeticException e) {
            // sizes from the file that overflow int or long arithmetic (Math.*Exact) are the model's fault
            throw new OnnxFormatException(model.source(), n.opType() + " node '" + n.label() + "': a size overflows (" + e.getMessage() + ")", e);
        } catch (IllegalArgumentException e) {
            // the inputs were checked against the model's declarations, so an operator refusing its operands is the model's fault
            throw new OnnxFormatException(model.source(), n.opType() + " node '" + n.label() + "': " + e.getMessage(), e);
        }
        return outs;
    }

    /** Records the outputs of {@code n}, computed now on INTERP (and constants from then on) where {@code fold}. */
    private void outputs(Node n, List<Tensor> outs, boolean fold) {
        long opset = model.opsetFor(n.domain());
        for (int k = 0; k < n.outputs().size(); k++) {
            String name = n.outputs().get(k);
            if (name.isEmpty()) continue;
            if (k >= outs.size() || outs.get(k) == null) {
                throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "output " + k + " ('" + name + "') is not supported");
            }
            Tensor t = outs.get(k);
            if (fold) {
                // (at most FOLD_OUTPUT_LIMIT elements: well within the one Java array INTERP holds a value in)
                try {
                    t.realize();
                } catch (IndexOutOfRangeException e) {
                    // an index computed from constants: the model's fault, found while folding (the message names the node)
                    throw new OnnxFormatException(model.source(), e.getMessage(), e);
                } catch (ArithmeticException | IllegalArgumentException e) {
                    // a folded constant, or a value on the way to it, of more elements than INTERP holds (Expand, Tile, ... of
                    // constants to a huge shape)
                    throw new OnnxFormatException(model.source(), n.opType() + " node '" + n.label() + "': output '" + name + "' of shape "
                            + t.shape() + " is too large to compute (" + e.getMessage() + ")", e);
                }
                constants.add(name);
            }
            values.put(name, t);
        }
    }

    /**
     * Refuses, while the node is known (so the error names it), an output over the {@link MemoryBudget}: a shape
     * computed from attributes or constants (Tile, Expand, ConstantOfShape, OneHot, ...) is bounded before the
     * plan that would allocate it is built.
     */
    private static void checkBudget(List<Tensor> outs) {
        for (Tensor t : outs) {
            if (t != null && !t.dtype().isPacked()) MemoryBudget.check(t.dtype().byteSize(t.numel()), "output of shape " + t.shape() + " x " + t.dtype());
        }
    }

    /** The model's name, for messages. */
    String source() { return model.source(); }

    /** The graph being built: a subgraph's opsets and its place in the model come from it. */
    OnnxGraph graph() { return model; }

    /** The names defined so far (inputs, initializers, earlier nodes' outputs): what a subgraph may read. */
    Set<String> definedNames() {
        if (hosts.isEmpty()) return java.util.Collections.unmodifiableSet(values.keySet());
        Set<String> all = new HashSet<>(values.keySet());
        all.addAll(hosts.keySet());
        return java.util.Collections.unmodifiableSet(all);
    }

    /** Sequence or optional {@code name}, or null when it is a tensor (or undefined). */
    OnnxValue hostValue(String name) { return hosts.get(name); }

    /** Value {@code name} of any kind: a tensor on {@code d} (a constant placed there once), or a sequence or optional. */
    OnnxValue value(String name, Device d) {
        OnnxValue h = hosts.get(name);
        return h != null ? h : new OnnxValue.TensorValue(on(name, d));
    }

    /** Value {@code name} as an operator's subgraph reads it: on {@code d}, a constant placed there once. */
    Tensor outerValue(String name, Device d) { return on(name, d); }

    /** True when value {@code name} is a constant: an initializer not overridden by an input, or a folded node's output. */
    boolean isConstant(String name) { return constants.contains(name); }

    /** The shape of tensor value {@code name} of this graph, or null where it holds none. */
    dev.kiln.types.Shape shapeOf(String name) {
        Tensor t = values.get(name);
        return t == null ? null : t.shape();
    }

    /** The values of {@code name} where it is a constant of integers, else null. */
    long[] constantIntegers(String name) {
        if (name.isEmpty() || !isConstant(name)) return null;
        Tensor t = outerValue(name, dev.kiln.runtime.DeviceRegistry.get("INTERP"));
        return t.dtype().isFloat() ? null : t.toLongArray();
    }

    /**
     * Whether values computed from {@code names} may be computed now, while the graph is built: always when they are all
     * constants, and for others unless a plan is being built (whose inputs have no values yet). A value computed from a
     * scan's or loop's step arguments still cannot be (it refuses when realised, naming why).
     */
    boolean valuesKnownNow(java.util.Collection<String> names) {
        return inputValuesKnown || names.stream().filter(x -> !x.isEmpty()).allMatch(constants::contains);
    }

    /**
     * A value whose elements an operator needs at build time: a constant as it is, otherwise the tensor
     * computed now (a graph input, or a value computed from one: its elements decide a shape).
     */
    Tensor valuesOf(String name, Tensor onDevice) {
        if (onDevice.shape().isSymbolic()) {
            throw new IllegalArgumentException("'" + name + "' has symbolic shape " + onDevice.shape()
                    + ", but this operator needs its values when the graph is built; prepare the model with concrete sizes");
        }
        if (constants.contains(name)) return values.get(name);
        if (!inputValuesKnown) {
            // reported as an UnsupportedOnnxOpException naming the node (apply)
            throw new UnsupportedOperationException("needs the values of '" + name + "' while the graph is built, and a prepared plan knows its inputs' "
                    + "values only when it runs; run the model with OnnxModel.run instead");
        }
        return onDevice.realize();
    }
}
