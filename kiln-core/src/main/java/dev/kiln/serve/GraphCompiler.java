package dev.kiln.serve;

import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.UPat;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PlanBuilder;
import dev.kiln.types.Shape;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.ir.PatternMatcher.rule;

/** Turns a {@link Graph} into a {@link CompiledGraph}: placeholders become owned buffers, constants move to the device. */
final class GraphCompiler {
    private GraphCompiler() {}

    /** Compiles {@code graph} for {@code device}: placeholders become owned buffers, constants move to the device. */
    static CompiledGraph compile(Device device, Graph graph, CompileOptions options) {
        List<UOp> roots = graph.outputNodes();
        String where = device.spec().toString();
        Arena weights = Arena.ofShared();
        Arena own = Arena.ofShared();
        try {
            List<TensorSpec> inputSpecs = graph.inputs(), paramSpecs = graph.params();
            Buffer[] inputBuffers = new Buffer[inputSpecs.size()];
            MemorySegment[] paramSegments = new MemorySegment[paramSpecs.size()];
            Map<Graph.Placeholder, UOp> replacement = new IdentityHashMap<>();
            int in = 0, pa = 0;
            for (Graph.Placeholder p : graph.placeholders()) {
                TensorSpec s = p.spec();
                Buffer b = new Buffer(where, s.dtype(), s.numel(), dev.kiln.runtime.Transfers.allocateHost(p.param() ? weights : own,
                        Math.max(s.byteSize(), 1), SharedGraphState.ALIGN));
                if (p.param()) paramSegments[pa++] = b.segment();
                else inputBuffers[in++] = b;
                UOp node = UOp.buffer(b);
                Shape laid = s.shape().maxShape(); // the placeholder node has the maximum shape; the graph made its symbolic axes
                replacement.put(p, node.shape().equals(laid) ? node : UOp.of(Op.RESHAPE, s.dtype(), laid, node));
            }
            List<UOp> rewritten = rewrite(roots, graph, replacement, where, weights);
            ExecutionPlan plan = PlanBuilder.build(device, rewritten);
            List<TensorSpec> outputSpecs = new ArrayList<>();
            for (int i = 0; i < rewritten.size(); i++) {
                UOp r = rewritten.get(i);
                outputSpecs.add(new TensorSpec("output" + i, r.dtype(), r.shape()));
            }
            SharedGraphState shared = new SharedGraphState(device.spec(), options, List.copyOf(inputSpecs), List.copyOf(paramSpecs), List.copyOf(outputSpecs),
                    inputBuffers, paramSegments, weights);
            MemorySegment[] inputSegments = Arrays.stream(inputBuffers).map(Buffer::segment).toArray(MemorySegment[]::new);
            return new CompiledGraph(shared, false, plan, own, inputSegments);
        } catch (RuntimeException | Error e) {
            own.close();
            weights.close();
            throw e;
        }
    }

    /**
     * The output nodes with every placeholder replaced by its buffer and every constant buffer of another
     * device copied (once, into the shared arena) to this one, unless it is a host constant this device reads in place
     * ({@link #sharable}).
     */
    private static List<UOp> rewrite(List<UOp> roots, Graph graph, Map<Graph.Placeholder, UOp> replacement, String where, Arena weights) {
        PatternMatcher compile = new PatternMatcher(List.of(
                rule(UPat.anyOf(EnumSet.of(Op.CUSTOM)).where(u -> Graph.placeholderOf(u) != null).named("p"), m -> {
                    Graph.Placeholder p = Graph.placeholderOf(m.get("p"));
                    if (p.graph() != graph) {
                        throw new IllegalArgumentException("compile: an output reads " + (p.param() ? "param" : "input") + " '" + p.spec().name()
                                + "' of another graph");
                    }
                    return replacement.get(p);
                }),
                rule(UPat.anyOf(EnumSet.of(Op.BUFFER)).where(u -> !Buffer.of(u).device().equals(where)).named("b"), m -> {
                    Buffer b = Buffer.of(m.get("b"));
                    if (sharable(b, where)) return UOp.buffer(new Buffer(where, b.dtype(), b.count(), b.segment()).asImmutable());
                    long bytes = b.dtype().byteSize(b.count());
                    MemorySegment s = weights.allocate(Math.max(bytes, 1), SharedGraphState.ALIGN);
                    MemorySegment.copy(b.segment(), 0, s, 0, bytes);
                    return UOp.buffer(new Buffer(where, b.dtype(), b.count(), s));
                })));
        return GraphRewriter.substitute(roots, compile); // one rewrite per node: each foreign buffer is copied once
    }

    /**
     * Whether a constant of another device can be read in place by device {@code where}: an immutable buffer in native
     * host memory (weights mapped from a file, say) of a host device, read by another host device (CPU and CLANG share
     * the host's memory). Kernels never write it, so no copy is needed to keep the graphs apart; a language model's
     * weights wrapped on the default device and compiled for CLANG were copied whole (1.3 GB for Llama-3.2-1B) before.
     */
    private static boolean sharable(Buffer b, String where) {
        return DeviceRegistry.get(b.device()).deviceMemory().isEmpty() && DeviceRegistry.get(where).deviceMemory().isEmpty()
                && b.isImmutable() && b.segment() != null && b.segment().isNative();
    }
}
