package dev.kiln.llm.model;

import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.OutputSlots;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Decode steps of several sequences at once over one compiled {@link LlamaGraph#buildBatched batched graph}: a fixed
 * number of slots, each with its own KV caches and position, and one forward pass per step for all of them, so every
 * weight is read once per step rather than once per sequence (continuous batching: sequences join and leave between
 * steps). A sequence enters a slot after its prompt ran on an ordinary {@link Decoder} ({@link #admit}), since a
 * prompt is many tokens and a step is one token a slot.
 *
 * <p>The products of a step take the rows of the slots in it and no others. The attention runs for every slot; one that
 * takes no part ({@code active[s]} false) runs at length 1 if it holds no sequence, or one past its sequence if it holds
 * one: the row it writes there is garbage that its next real step overwrites before reading it. Not thread-safe: one
 * caller at a time (a server's scheduler thread).
 */
public final class BatchedDecode implements AutoCloseable {
    private final CompiledGraph graph;
    private final LlamaSpec spec;
    private final int slots, context;
    private final float[][] inputs; // each row's token, each row's slot, each slot's row, then null for every cache (a handle)
    private final int[] position;   // tokens each slot holds; -1 for a free slot
    private boolean closed;

    BatchedDecode(CompiledGraph graph, LlamaSpec spec, int slots, int context) {
        this.graph = graph;
        this.spec = spec;
        this.slots = slots;
        this.context = context;
        this.inputs = new float[3 + 2 * spec.layers() * slots][];
        for (int i = 0; i < 3; i++) inputs[i] = new float[slots];
        this.position = new int[slots];
        java.util.Arrays.fill(position, -1);
        for (int i = 0; i < spec.layers(); i++) {
            for (int s = 0; s < slots; s++) {
                graph.bindZeroHandle(LlamaGraph.keyCache(i, s));
                graph.bindZeroHandle(LlamaGraph.valueCache(i, s));
            }
        }
    }

    /** The number of slots. */
    public int slots() { return slots; }

    /** The most tokens a sequence may hold. */
    public int contextLength() { return context; }

    /** The tokens slot {@code s} holds, or -1 when it is free. */
    public int position(int s) { return position[check(s)]; }

    /**
     * Moves the sequence of {@code decoder} (a decoder of the same model, after its prompt) into slot {@code s}: the rows
     * of its KV caches that hold the sequence are copied, and the slot continues from the decoder's position. The
     * decoder is left as it was.
     *
     * @throws IllegalArgumentException if the decoder is not one of this model's, or holds no tokens
     */
    public void admit(int s, Decoder decoder) {
        checkOpen();
        check(s);
        if (!(decoder instanceof LlamaDecoder d) || d.contextLength() != context) {
            throw new IllegalArgumentException("admit: the decoder must be one of this model's (context " + context + "), got " + decoder);
        }
        if (d.position() == 0) throw new IllegalArgumentException("admit: the decoder holds no tokens; run its prompt first");
        long elements = (long) d.position() * spec.kvDim(); // the rows the sequence holds; rows past them are never read
        for (int i = 0; i < spec.layers(); i++) {
            graph.copyHandle(LlamaGraph.keyCache(i, s), d.graph(), LlamaGraph.keyCache(i), elements);
            graph.copyHandle(LlamaGraph.valueCache(i, s), d.graph(), LlamaGraph.valueCache(i), elements);
        }
        position[s] = d.position();
    }

    /** Frees slot {@code s}: it holds no sequence until the next {@link #admit}. */
    public void release(int s) { position[check(s)] = -1; }

    /**
     * One step: {@code tokens[s]} appended to the sequence of each slot with {@code active[s]}, all in one forward pass.
     *
     * @return the next-token logits of each active slot (null for the others)
     * @throws IllegalArgumentException  if an active slot is free or a token is outside the vocabulary
     * @throws ContextOverflowException  if an active slot's sequence is full
     */
    public float[][] step(int[] tokens, boolean[] active) {
        checkOpen();
        if (tokens.length != slots || active.length != slots) {
            throw new IllegalArgumentException("step: " + slots + " tokens and flags expected, got " + tokens.length + " and " + active.length);
        }
        float[] ids = inputs[0], slotOfRow = inputs[1], rowOfSlot = inputs[2];
        int rows = 0;
        for (int s = 0; s < slots; s++) {
            if (active[s]) {
                if (position[s] < 0) throw new IllegalArgumentException("step: slot " + s + " holds no sequence; admit one first");
                if (position[s] >= context) throw new ContextOverflowException(position[s], 1, context);
                if (tokens[s] < 0 || tokens[s] >= spec.vocab()) {
                    throw new IllegalArgumentException("step: slot " + s + "'s token " + tokens[s] + " is outside the vocabulary [0, " + spec.vocab() + ")");
                }
            } else if (position[s] >= context) {
                throw new IllegalArgumentException("step: slot " + s + " is full and must step or be released");
            }
        }
        for (int s = 0; s < slots; s++) {
            rowOfSlot[s] = 0;
            if (active[s]) {
                ids[rows] = tokens[s];
                slotOfRow[rows] = s;
                rowOfSlot[s] = rows++;
            }
            graph.setVariable(LlamaGraph.slotLength(s), position[s] < 0 ? 1 : position[s] + 1);
        }
        float[][] logits = new float[slots][];
        if (rows == 0) return logits;
        graph.setVariable(LlamaGraph.ACTIVE, rows);
        OutputSlots out = graph.runSlots(inputs);
        int vocab = spec.vocab();
        for (int s = 0; s < slots; s++) {
            if (!active[s]) continue;
            position[s]++;
            logits[s] = new float[vocab];
            MemorySegment.copy(graph.arena(), ValueLayout.JAVA_FLOAT, out.offset(0) + 4L * (long) rowOfSlot[s] * vocab, logits[s], 0, vocab);
        }
        return logits;
    }

    private int check(int s) {
        if (s < 0 || s >= slots) throw new IndexOutOfBoundsException("slot " + s + " is outside [0, " + slots + ")");
        return s;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("the batched decode is closed");
    }

    /** Frees the compiled graph and its caches. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        graph.close();
    }
}
