package dev.kiln.llm.model;

import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.gguf.NativeBlockProducts;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Session;
import dev.kiln.types.DType;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A Llama-family model compiled for one device: the {@link LlamaGraph} compiled once, and {@link Decoder}s over it,
 * each with its own KV caches. The first decoder runs the compiled graph itself; a decoder asked for while every
 * other is in use runs a replica ({@link CompiledGraph#copy()}: the same kernels and weights, its own caches), so
 * threads may decode side by side. A closed decoder returns to the model for reuse. Replicas are copied from the
 * compiled graph between two of its runs: its decoder runs while holding the graph's monitor.
 */
public final class LlamaModel implements AutoCloseable {
    private final LlamaSpec spec;
    private final LlamaWeights weights;
    private final Session session;
    private final int context, maxChunk;
    private final DType cacheType;
    /** The CLANG device's native decode products, or null (the Vector API's). */
    private final NativeBlockProducts natives;
    private final CompiledGraph graph;
    private final Deque<LlamaDecoder> idle = new ArrayDeque<>();
    private final java.util.List<LlamaDecoder> all = new java.util.ArrayList<>();
    private LlamaDecoder allLogits; // compiled on first use: scoring needs every position's logits, generation the last
    private boolean closed;

    private LlamaModel(LlamaSpec spec, LlamaWeights weights, Session session, int context, int maxChunk, DType cacheType, boolean quantizedActivations) {
        this.natives = NativeBlockProducts.forDevice(session.device()).map(n -> n.withQuantizedActivations(quantizedActivations)).orElse(null);
        if (quantizedActivations && natives == null) {
            throw new UnsupportedOperationException("quantized activations need the CLANG device's native products; this model is compiled for "
                    + session.device().spec() + " (use the CLANG device, or leave activations in f32)");
        }
        this.spec = spec;
        this.weights = weights;
        this.session = session;
        this.context = context;
        this.maxChunk = maxChunk;
        this.cacheType = cacheType;
        var built = LlamaGraph.build(spec, weights, maxChunk, context, cacheType, false, natives);
        if (natives != null) natives.interleaveAhead(); // while the graph compiles: its copies cost a cold start 0.4 s otherwise
        try {
            this.graph = session.compile(built);
            idle.add(track(new LlamaDecoder(this, graph, spec, context, maxChunk, cacheType, false)));
        } catch (RuntimeException | Error e) {
            if (natives != null) natives.close(); // stops the copies before the caller closes the weights' file
            throw e;
        }
    }

    /**
     * Compiles the model for {@code session}'s device: sequences of up to {@code context} tokens, prompts run
     * {@code maxChunk} tokens at a time, KV caches of {@code cacheType} (f32 or f16). On CLANG, decode's products with
     * Q8_0 and Q4_0 weights are native code ({@link NativeBlockProducts}), with x in f32 or, when
     * {@code quantizedActivations}, quantised to Q8_0 as llama.cpp does.
     *
     * @throws UnsupportedOperationException if activations are to be quantised on a device other than CLANG
     */
    public static LlamaModel compile(LlamaSpec spec, LlamaWeights weights, Session session, int context, int maxChunk, DType cacheType,
                                     boolean quantizedActivations) {
        return new LlamaModel(spec, weights, session, context, maxChunk, cacheType, quantizedActivations);
    }

    private LlamaDecoder track(LlamaDecoder d) {
        all.add(d);
        return d;
    }

    /** The spec the graph was built from. */
    public LlamaSpec spec() { return spec; }

    /** The most tokens a sequence may hold. */
    public int contextLength() { return context; }

    /** The most tokens one run takes (longer prompts run in pieces). */
    public int maxChunk() { return maxChunk; }

    /** The compiled graph generation runs (its plan shows the kernels). */
    public CompiledGraph graph() { return graph; }

    /** A decoder at position 0: an idle one, or one over a new replica of the compiled graph. */
    public synchronized Decoder newDecoder() {
        checkOpen();
        LlamaDecoder d = idle.poll();
        if (d == null) {
            CompiledGraph replica;
            synchronized (graph) { // a compiled graph is copied between runs, never during one (LlamaDecoder runs under this lock)
                replica = graph.copy(false); // the caches' handles, not another sequence's rows in them
            }
            d = track(new LlamaDecoder(this, replica, spec, context, maxChunk, cacheType, true));
        }
        d.open();
        return d;
    }

    /**
     * A batched decode of {@code slots} sequences over a graph compiled for it (see {@link BatchedDecode}); the caller
     * owns and closes it. Prompts still run on {@link #newDecoder() decoders}, whose sequences then join a slot.
     */
    public synchronized BatchedDecode newBatchedDecode(int slots) {
        checkOpen();
        return new BatchedDecode(session.compile(LlamaGraph.buildBatched(spec, weights, slots, context, cacheType, natives)), spec, slots, context);
    }

    synchronized void release(LlamaDecoder d) {
        if (!closed && d != allLogits) idle.push(d);
    }

    /**
     * The logits of every token of {@code tokens} given the ones before it, a row of {@code vocab} values per token:
     * one forward pass over the sequence (in chunks of {@link #maxChunk()}), as a model is scored.
     *
     * @throws dev.kiln.llm.generate.ContextOverflowException if there are more tokens than the context holds
     */
    public synchronized float[][] logits(int... tokens) {
        checkOpen();
        if (allLogits == null) {
            CompiledGraph g = session.compile(LlamaGraph.build(spec, weights, maxChunk, context, cacheType, true, natives));
            allLogits = new LlamaDecoder(this, g, spec, context, maxChunk, cacheType, false);
        }
        allLogits.open();
        return allLogits.allLogits(tokens);
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("the model is closed");
    }

    /**
     * Frees the compiled graphs, every decoder's caches and the weights interleaved for the native products; the weights'
     * files are the caller's to close.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        for (LlamaDecoder d : all) if (d.isReplica()) d.graph().close();
        graph.close();
        if (allLogits != null) allLogits.graph().close();
        if (natives != null) natives.close(); // the weights it interleaved
    }
}
