package dev.kiln.llm.model;

import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.OutputSlots;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One sequence on a compiled {@link LlamaGraph}: its KV caches are the graph's handles, which every run updates in
 * place, and its position is the graph's {@code length} variable. A prompt longer than the graph's chunk
 * runs in pieces. Nothing in the caches needs clearing on {@link #reset()}: a run reads rows below its length only,
 * and every such row was written by an earlier run of this sequence.
 */
final class LlamaDecoder implements Decoder {
    private final LlamaModel model;
    private final CompiledGraph graph;
    private final LlamaSpec spec;
    private final int context, maxChunk;
    private final boolean replica;
    private final float[][] inputs; // runSlots' inputs: the token ids, then null for every cache (a handle)
    private int position;
    private boolean open;

    LlamaDecoder(LlamaModel model, CompiledGraph graph, LlamaSpec spec, int context, int maxChunk, DType cacheType, boolean replica) {
        this.model = model;
        this.graph = graph;
        this.spec = spec;
        this.context = context;
        this.maxChunk = maxChunk;
        this.replica = replica;
        this.inputs = new float[1 + 2 * spec.layers()][];
        inputs[0] = new float[maxChunk];
        if (replica) return; // a replica starts with its original's handles and feeds
        for (int i = 0; i < spec.layers(); i++) { // the graph writes the chunk's rows into them in place: nothing is fed back
            graph.bindZeroHandle(LlamaGraph.keyCache(i));
            graph.bindZeroHandle(LlamaGraph.valueCache(i));
        }
    }

    CompiledGraph graph() { return graph; }

    boolean isReplica() { return replica; }

    void open() {
        open = true;
        position = 0;
    }

    @Override public int contextLength() { return context; }

    @Override public int vocabularySize() { return spec.vocab(); }

    @Override public int position() { return position; }

    @Override
    public float[] append(int... tokens) {
        check(tokens);
        float[] logits = new float[spec.vocab()];
        for (int from = 0; from < tokens.length; from += maxChunk) {
            int n = Math.min(maxChunk, tokens.length - from);
            OutputSlots slots = run(tokens, from, n);
            MemorySegment.copy(graph.arena(), ValueLayout.JAVA_FLOAT, slots.offset(0), logits, 0, spec.vocab());
        }
        return logits;
    }

    /** Every token's logits (the graph must have been built with all logits). */
    float[][] allLogits(int[] tokens) {
        check(tokens);
        float[][] out = new float[tokens.length][];
        for (int from = 0; from < tokens.length; from += maxChunk) {
            int n = Math.min(maxChunk, tokens.length - from);
            OutputSlots slots = run(tokens, from, n);
            for (int r = 0; r < n; r++) {
                out[from + r] = new float[spec.vocab()];
                MemorySegment.copy(graph.arena(), ValueLayout.JAVA_FLOAT, slots.offset(0) + 4L * r * spec.vocab(), out[from + r], 0, spec.vocab());
            }
        }
        return out;
    }

    private void check(int[] tokens) {
        if (!open) throw new IllegalStateException("the decoder is closed");
        if (tokens.length == 0) throw new IllegalArgumentException("append: no tokens");
        if (tokens.length > context - position) throw new ContextOverflowException(position, tokens.length, context);
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= spec.vocab()) {
                throw new IllegalArgumentException("append: token " + i + " is id " + tokens[i] + ", outside the vocabulary [0, " + spec.vocab() + ")");
            }
        }
    }

    private OutputSlots run(int[] tokens, int from, int n) {
        float[] ids = inputs[0];
        for (int i = 0; i < n; i++) ids[i] = tokens[from + i];
        OutputSlots slots;
        synchronized (graph) { // LlamaModel copies the graph for new decoders under this lock
            graph.setVariable(LlamaGraph.CHUNK, n);
            graph.setVariable(LlamaGraph.LENGTH, position + n);
            slots = graph.runSlots(inputs);
        }
        position += n;
        return slots;
    }

    @Override
    public void reset() {
        if (!open) throw new IllegalStateException("the decoder is closed");
        position = 0;
    }

    @Override
    public void close() {
        if (!open) return;
        open = false;
        model.release(this);
    }
}
