package dev.kiln.onnx;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An ONNX model loaded for Kiln: {@link #run} builds its graph as lazy {@link Tensor} operations on the
 * inputs' device. Loading parses the file, converts the initializers to realised tensors and checks that
 * every node's operator is supported at the model's opset (ai.onnx opsets 7 to 17), so an unsupported model
 * fails before anything runs.
 *
 * <p>Weights stored as ONNX external data (files beside the model, {@code data_location = EXTERNAL}) are mapped
 * into memory, not copied: the model owns the mappings, and {@link #close()} releases them. Close it after the
 * plans and tensors built from it, which read the weights in place; a model without external data holds nothing
 * that needs closing.
 */
public final class OnnxModel implements AutoCloseable {
    /**
     * The ai.onnx opsets Kiln accepts. Operators are implemented as their versions up to opset 17 define them;
     * an operator whose older version behaves differently handles it (legacy broadcasting, attributes that
     * later became inputs) or is reported unsupported at that opset.
     */
    public static final int MIN_OPSET = 1, MAX_OPSET = 17;

    private final String source;
    private final int opset;
    private final Map<String, Long> opsetImports;
    private final List<ValueInfo> inputs, outputs;
    private final Map<String, Tensor> initializers;
    private final List<Node> nodes;
    private final ExternalData external;
    private volatile boolean closed;

    private OnnxModel(String source, int opset, Map<String, Long> opsetImports, List<ValueInfo> inputs, List<ValueInfo> outputs,
                      Map<String, Tensor> initializers, List<Node> nodes, ExternalData external) {
        this.source = source;
        this.opset = opset;
        this.opsetImports = opsetImports;
        this.inputs = inputs;
        this.outputs = outputs;
        this.initializers = initializers;
        this.nodes = nodes;
        this.external = external;
    }

    /**
     * Loads and checks an ONNX model file. The file is parsed from a read-only mapping of it, not from a heap copy;
     * external data files are resolved relative to its directory and mapped ({@link #close()} releases them).
     *
     * @throws OnnxFormatException if the file cannot be read, is over protobuf's 2 GiB limit, is not a valid ModelProto,
     *                             breaks the format's rules, or names external data that is missing, outside the
     *                             model's directory or not the size its tensor needs
     * @throws UnsupportedOnnxOpException if a node's operator, an attribute or a value type is not supported
     */
    public static OnnxModel load(Path file) {
        ModelProto m = ProtoFiles.parse(file, "ONNX ModelProto", "a model this large must keep its weights in ONNX external data files"
                + " (onnx.save_model(model, path, save_as_external_data=True))", ModelProto::parseFrom);
        Path dir = file.toAbsolutePath().getParent();
        ExternalData external = dir == null ? ExternalData.unavailable() : ExternalData.ownedBy(dir);
        try {
            return fromProto(m, file.toString(), external);
        } catch (RuntimeException | Error e) {
            external.close(); // a model that failed to load owns nothing: unmap what its checks mapped
            throw e;
        }
    }

    /**
     * Loads a self-contained model from its bytes, as {@link #load(Path)} loads a file ({@code source} names it in
     * messages): a model that came over the network (a Spark broadcast) needs no temporary file. A tensor stored as
     * external data is an {@link OnnxFormatException}: there is no directory to find it in.
     *
     * @throws OnnxFormatException if the bytes are not a valid ONNX model
     */
    public static OnnxModel load(byte[] bytes, String source) { return parse(bytes, source); }

    /**
     * Parses and checks a model from its bytes ({@code src} names it in messages); the fuzz tests enter here. With
     * no file there is no directory, so a tensor stored as external data is an {@link OnnxFormatException}.
     */
    static OnnxModel parse(byte[] bytes, String src) {
        ModelProto m;
        try {
            m = ModelProto.parseFrom(ProtoFiles.input(CodedInputStream.newInstance(bytes)));
        } catch (InvalidProtocolBufferException e) {
            throw new OnnxFormatException(src, "not a valid ONNX ModelProto (" + e.getMessage() + ")", e);
        } catch (IOException e) {
            throw new OnnxFormatException(src, "cannot parse (" + ProtoFiles.reason(e) + ")", e);
        }
        return fromProto(m, src);
    }

    /** {@link #fromProto(ModelProto, String, ExternalData)} for a message that came from no file. */
    static OnnxModel fromProto(ModelProto m, String src) { return fromProto(m, src, ExternalData.unavailable()); }

    /** The model {@code m}; {@code external} resolves its external data and is owned by the model from here. */
    static OnnxModel fromProto(ModelProto m, String src, ExternalData external) {
        if (!m.hasGraph()) throw new OnnxFormatException(src, "the model has no graph (empty or not an ONNX model)");
        Map<String, Long> imports = new LinkedHashMap<>();
        for (OperatorSetIdProto o : m.getOpsetImportList()) imports.put(domainName(o.getDomain()), o.getVersion());
        // IR versions before 3 had no opset imports: their operators are opset 1's
        if (imports.isEmpty() && m.getIrVersion() < 3) imports.put("ai.onnx", 1L);
        long onnxOpset = imports.getOrDefault("ai.onnx", -1L);
        if (imports.containsKey("ai.onnx") && (onnxOpset < MIN_OPSET || onnxOpset > MAX_OPSET)) {
            throw new UnsupportedOnnxOpException("ai.onnx opset " + onnxOpset, "Kiln maps ai.onnx opsets " + MIN_OPSET + " to " + MAX_OPSET + " only");
        }
        GraphProto g = m.getGraph();
        if (g.getSparseInitializerCount() > 0) throw new UnsupportedOnnxOpException("'" + g.getSparseInitializer(0).getValues().getName() + "'", "sparse initializers are not supported");

        List<Node> nodes = new ArrayList<>();
        for (int k = 0; k < g.getNodeCount(); k++) nodes.add(Node.of(g.getNode(k), k, src, external));
        List<String> initNames = new ArrayList<>();
        for (TensorProto t : g.getInitializerList()) {
            if (t.getName().isEmpty()) throw new OnnxFormatException(src, "an initializer has no name");
            initNames.add(t.getName());
        }
        Set<String> initSet = new HashSet<>(initNames);
        List<ValueInfo> ins = new ArrayList<>();
        for (ValueInfoProto v : g.getInputList()) if (!initSet.contains(v.getName())) ins.add(valueInfo(v, src));
        List<ValueInfo> outs = new ArrayList<>();
        for (ValueInfoProto v : g.getOutputList()) outs.add(valueInfo(v, src));
        // the graph's structure and its operators first: nothing is allocated for a malformed or unsupported model
        GraphValidator.validate(src, initNames, g.getInputList().stream().map(ValueInfoProto::getName).toList(), nodes,
                g.getOutputList().stream().map(ValueInfoProto::getName).toList(), n -> imports.getOrDefault(domainName(n.domain()), -1L));
        for (Node n : nodes) OnnxOps.check(n, imports.getOrDefault(domainName(n.domain()), -1L));
        // tensor attributes become tensors only when their node is built: their external data is checked now
        for (Node n : nodes) n.attrs().checkExternalData();

        Map<String, Tensor> inits = new LinkedHashMap<>();
        for (TensorProto t : g.getInitializerList()) inits.put(t.getName(), TensorProtos.toTensor(t, src + " initializer " + t.getName(), external));

        return new OnnxModel(src, Math.toIntExact(onnxOpset), Collections.unmodifiableMap(imports), List.copyOf(ins), List.copyOf(outs),
                Collections.unmodifiableMap(inits), List.copyOf(nodes), external);
    }

    private static String domainName(String d) { return d.isEmpty() ? "ai.onnx" : d; }

    /** The model's opset for a node domain ({@code ""} is ai.onnx), or -1 if it imports none. */
    long opsetFor(String domain) { return opsetImports.getOrDefault(domainName(domain), -1L); }

    private static ValueInfo valueInfo(ValueInfoProto v, String src) {
        TypeProto t = v.getType();
        String name = v.getName();
        // a sequence or optional holds tensors (or, for an optional, a sequence of them): its dtype and shape are theirs
        ValueInfo.Kind kind = switch (t.getValueCase()) {
            case TENSOR_TYPE -> ValueInfo.Kind.TENSOR;
            case SEQUENCE_TYPE -> {
                t = element(t.getSequenceType().getElemType(), name, src, "sequence");
                yield ValueInfo.Kind.SEQUENCE;
            }
            case OPTIONAL_TYPE -> {
                TypeProto e = t.getOptionalType().getElemType();
                if (e.getValueCase() == TypeProto.ValueCase.SEQUENCE_TYPE) {
                    t = element(e.getSequenceType().getElemType(), name, src, "optional sequence");
                    yield ValueInfo.Kind.OPTIONAL_SEQUENCE;
                }
                t = element(e, name, src, "optional");
                yield ValueInfo.Kind.OPTIONAL_TENSOR;
            }
            case MAP_TYPE -> throw new UnsupportedOnnxOpException("'" + name + "'", "map values are not supported");
            case SPARSE_TENSOR_TYPE -> throw new UnsupportedOnnxOpException("'" + name + "'", "sparse tensors are not supported");
            default -> throw new OnnxFormatException(src, "value '" + name + "' has no type");
        };
        TypeProto.Tensor tt = t.getTensorType();
        // a tensor of strings is a host value of its own kind; strings in a sequence or optional are refused (no Kiln dtype)
        if (kind == ValueInfo.Kind.TENSOR && tt.getElemType() == TensorProto.DataType.STRING_VALUE) kind = ValueInfo.Kind.STRING;
        DType dt = kind == ValueInfo.Kind.STRING ? null : TensorProtos.dtype(tt.getElemType(), "'" + name + "'");
        List<ValueInfo.Dim> dims = null;
        if (tt.hasShape()) {
            dims = new ArrayList<>();
            for (TensorShapeProto.Dimension d : tt.getShape().getDimList()) {
                // a negative size would read as an open dimension and one past int as a size no tensor has: both the file's error
                if (d.hasDimValue() && (d.getDimValue() < 0 || d.getDimValue() > Integer.MAX_VALUE)) {
                    throw new OnnxFormatException(src, "value '" + name + "' has dimension " + dims.size() + " of size " + d.getDimValue()
                            + ": expected a size from 0 to " + Integer.MAX_VALUE + " or a symbolic name");
                }
                dims.add(switch (d.getValueCase()) {
                    case DIM_VALUE -> new ValueInfo.Dim(d.getDimValue(), null);
                    case DIM_PARAM -> new ValueInfo.Dim(-1, d.getDimParam());
                    default -> new ValueInfo.Dim(-1, null);
                });
            }
        }
        return new ValueInfo(name, dt, dims, kind);
    }

    /** The tensor type a {@code container} value {@code name} holds: Kiln's sequences and optionals hold tensors. */
    private static TypeProto element(TypeProto e, String name, String src, String container) {
        return switch (e.getValueCase()) {
            case TENSOR_TYPE -> e;
            case VALUE_NOT_SET -> throw new OnnxFormatException(src, "value '" + name + "' is a " + container + " with no element type");
            default -> throw new UnsupportedOnnxOpException("'" + name + "'", "a " + container + " of " + e.getValueCase().name().toLowerCase(java.util.Locale.ROOT)
                    .replace("_type", "") + " values is not supported; Kiln's sequences and optionals hold tensors");
        };
    }

    /** The graph inputs the caller supplies (initializers excluded), in graph order. */
    public List<ValueInfo> inputs() { return inputs; }

    /** The graph outputs, in graph order. */
    public List<ValueInfo> outputs() { return outputs; }

    /** The model's ai.onnx opset version, or -1 if it imports none (then only other domains' operators appear). */
    public int opset() { return opset; }

    /** The operator types of the graph's nodes, in node order (with repeats). */
    public List<String> opTypes() { return nodes.stream().map(Node::opType).toList(); }

    List<Node> nodes() { return nodes; }

    Map<String, Tensor> initializers() { return initializers; }

    String source() { return source; }

    /**
     * Builds the model's graph on the given inputs and returns its outputs, in graph order, as lazy tensors on
     * the inputs' device (the default device when the model has no inputs). Symbolic dimensions take the sizes
     * of the given tensors ({@link #bindDims}).
     *
     * @param inputs a tensor for every input of {@link #inputs()}, by name
     * @throws IllegalArgumentException if an input is missing or unknown, or its dtype or shape does not match the model
     */
    public List<Tensor> run(Map<String, Tensor> inputs) {
        checkOpen("run");
        for (ValueInfo v : this.inputs) refuseHostValue(v, "input");
        for (ValueInfo v : outputs) refuseHostValue(v, "output");
        bindDims(inputs);
        Device device = inputs.isEmpty() ? Tensor.defaultDevice() : inputs.get(this.inputs.getFirst().name()).device();
        return new GraphBuilder(this, device).build(inputs);
    }

    private void refuseHostValue(ValueInfo v, String what) {
        if (!v.isTensor()) {
            throw new UnsupportedOperationException("run: " + what + " '" + v.name() + "' of " + source + " is " + v
                    + "; run(Map<String, Tensor>) takes and gives tensors only");
        }
    }

    /**
     * Builds the graph on inputs that may be sequences or optionals ({@link OnnxValue}); its outputs in graph order, a
     * sequence's or optional's tensors lazy on {@code device}. Each input must have the kind the model declares.
     */
    List<OnnxValue> runValues(Map<String, OnnxValue> inputs, Device device) {
        checkOpen("run");
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        Map<String, OnnxValue> hosts = new LinkedHashMap<>();
        for (ValueInfo v : this.inputs) {
            OnnxValue given = inputs.get(v.name());
            if (given == null) throw new IllegalArgumentException("run: input '" + v.name() + "' (" + v + ") of " + source + " is missing");
            HostValues.checkKind(source, "input '" + v.name() + "'", v, given);
            if (given instanceof OnnxValue.TensorValue(Tensor t)) tensors.put(v.name(), t);
            else hosts.put(v.name(), given);
        }
        bindDims(tensors);
        List<OnnxValue> out = new GraphBuilder(this, device).buildValues(tensors, Map.of(), hosts);
        for (int k = 0; k < out.size(); k++) {
            try {
                HostValues.checkKind(source, "output '" + outputs.get(k).name() + "'", outputs.get(k), out.get(k));
            } catch (IllegalArgumentException e) {
                throw new OnnxFormatException(source, "the graph computes " + e.getMessage(), e); // the model contradicts its own declaration
            }
        }
        return out;
    }

    /**
     * Prepares the model once on {@code device} as a plan that serves every size of its symbolic input dimensions
     * up to the given maxima: each dimension name becomes a {@link dev.kiln.types.Variable} in {@code [1, max]}, bound
     * from the inputs' shapes by {@link OnnxPlan#bind}. Operators that need a value's elements or a symbolic
     * size while the graph is built (Shape, Reshape from a computed shape, ...) reject symbolic inputs, naming
     * the node.
     *
     * @param maxDims the maximum size of every symbolic dimension name of the inputs (none for a fixed-shape model)
     * @throws IllegalArgumentException if a symbolic dimension has no maximum, a name is not one of the model's,
     *                                  an input has an unnamed open dimension, or an operator cannot take symbolic sizes
     */
    public OnnxPlan prepare(Device device, Map<String, Integer> maxDims) {
        checkOpen("prepare");
        for (ValueInfo v : inputs) refuseHostValue(v, "input");
        for (ValueInfo v : outputs) refuseHostValue(v, "output");
        return OnnxPlan.prepare(this, device, maxDims);
    }

    private void checkOpen(String op) {
        if (closed) throw new IllegalStateException(op + ": " + source + " has been closed");
    }

    /**
     * Releases the external data files this model mapped: tensors and plans built from it that read its weights in
     * place fail with an {@link IllegalStateException} afterwards, so close them first. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        external.close();
    }

    /** The external data this model resolved (and owns); for tests. */
    ExternalData externalData() { return external; }

    /**
     * Checks the given inputs against the declared ones and decides the size of every dimension: fixed sizes
     * must match, and each symbolic name takes one size throughout. This is the one place where dimension
     * sizes are decided; today they are the sizes of the given tensors, so a model is built for the concrete
     * shapes the caller supplies.
     *
     * @return the size chosen for each symbolic dimension name
     */
    Map<String, Long> bindDims(Map<String, Tensor> given) {
        for (String name : given.keySet()) {
            if (inputs.stream().noneMatch(v -> v.name().equals(name))) {
                throw new IllegalArgumentException("run: " + source + " has no input '" + name + "'; its inputs are "
                        + inputs.stream().map(ValueInfo::name).toList());
            }
        }
        Map<String, Long> symbols = new LinkedHashMap<>();
        for (ValueInfo v : inputs) {
            if (!v.isTensor()) continue; // checked by kind where given (runValues)
            Tensor t = given.get(v.name());
            if (t == null) throw new IllegalArgumentException("run: input '" + v.name() + "' (" + v + ") of " + source + " is missing");
            if (t.dtype() != v.dtype()) {
                throw new IllegalArgumentException("run: input '" + v.name() + "' must be " + v.dtype() + ", got " + t.dtype());
            }
            if (v.dims() == null) continue;
            int[] d = t.dims();
            if (d.length != v.dims().size()) {
                throw new IllegalArgumentException("run: input '" + v.name() + "' must have shape " + v.dims() + ", got " + t.shape());
            }
            for (int k = 0; k < d.length; k++) {
                ValueInfo.Dim want = v.dims().get(k);
                if (want.isFixed() && want.size() != d[k]) {
                    throw new IllegalArgumentException("run: input '" + v.name() + "' must have shape " + v.dims() + ", got " + t.shape()
                            + " (axis " + k + ")");
                }
                if (want.isSymbolic()) {
                    Long prev = symbols.putIfAbsent(want.symbol(), (long) d[k]);
                    if (prev != null && prev != d[k]) {
                        throw new IllegalArgumentException("run: dimension '" + want.symbol() + "' is " + prev + " in one input and " + d[k]
                                + " in input '" + v.name() + "' (axis " + k + ")");
                    }
                }
            }
        }
        return symbols;
    }

    @Override
    public String toString() { return "OnnxModel[" + source + ", opset " + opset + ", " + nodes.size() + " nodes]"; }
}
