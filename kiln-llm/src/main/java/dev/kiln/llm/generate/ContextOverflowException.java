package dev.kiln.llm.generate;

/**
 * A sequence would pass the model's context: {@code position} tokens held plus {@code requested} more is over
 * {@code contextLength}. Raised before anything runs, so the decoder is unchanged.
 */
public final class ContextOverflowException extends IllegalStateException {
    private final int position, requested, contextLength;

    public ContextOverflowException(int position, int requested, int contextLength) {
        super("context overflow: " + position + " tokens in the sequence plus " + requested + " more is " + ((long) position + requested)
                + ", over the context length of " + contextLength + " (open the model with a longer context, or shorten the prompt or max tokens)");
        this.position = position;
        this.requested = requested;
        this.contextLength = contextLength;
    }

    /** Tokens the sequence held. */
    public int position() { return position; }

    /** Tokens that were to be added. */
    public int requested() { return requested; }

    /** The most tokens a sequence may hold. */
    public int contextLength() { return contextLength; }
}
