package dev.kiln.llm.server;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.model.BatchedDecode;

/**
 * A server slot's sequence as a {@link Decoder} for its {@link dev.kiln.llm.generate.TokenStream}: the prompt runs on
 * an ordinary decoder of the model, whose sequence then joins the slot of the {@link BatchedDecode}; from then on each
 * token's logits come from the batched step that {@link Scheduler.BatchedStep} runs for every slot before it advances
 * the streams ({@link #prepare}). A token appended without a step prepared for it is refused: no single-sequence
 * fallback runs behind the batch's back.
 */
final class SlotDecoder implements Decoder {
    private final LanguageModel model;
    private final BatchedDecode batch;
    private final int slot;
    private boolean joined, open = true;
    private int preparedToken = -1;
    private float[] prepared;

    SlotDecoder(LanguageModel model, BatchedDecode batch, int slot) {
        this.model = model;
        this.batch = batch;
        this.slot = slot;
    }

    /** Whether the prompt ran and the sequence is in its batch slot (its next token needs a batched step). */
    boolean joined() { return joined; }

    /** The logits the batched step computed for {@code token}, the token this slot's stream appends next. */
    void prepare(int token, float[] logits) {
        preparedToken = token;
        prepared = logits;
    }

    @Override public int contextLength() { return batch.contextLength(); }

    @Override public int vocabularySize() { return model.compiled().spec().vocab(); }

    @Override public int position() { return joined ? batch.position(slot) : 0; }

    @Override
    public float[] append(int... tokens) {
        if (!open) throw new IllegalStateException("slot " + slot + ": the decoder is closed");
        if (!joined) {
            try (Decoder d = model.newDecoder()) {
                float[] logits = d.append(tokens);
                batch.admit(slot, d);
                joined = true;
                return logits;
            }
        }
        if (tokens.length != 1 || prepared == null || tokens[0] != preparedToken) {
            throw new IllegalStateException("slot " + slot + ": " + tokens.length + " token(s) " + (tokens.length == 1 ? tokens[0] + " " : "")
                    + "appended without a batched step for them (prepared: " + (prepared == null ? "none" : "token " + preparedToken) + ")");
        }
        float[] logits = prepared;
        prepared = null;
        return logits;
    }

    @Override
    public void reset() {
        if (joined) batch.release(slot);
        joined = false;
        prepared = null;
    }

    @Override
    public void close() {
        if (!open) return;
        open = false;
        reset();
    }
}
