package dev.kiln.llm.generate;

import dev.kiln.llm.tokenizer.TokenDecoder;
import dev.kiln.llm.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Consumer;

/**
 * A generation as an iterator: each {@link #next()} runs the model one step (the first runs the prompt) and returns
 * the token chosen, so nothing is computed before it is asked for and a consumer that stops early stops the model.
 * The last element carries the {@link GeneratedToken#finish() finish reason}; {@link #result()} then holds the text,
 * the tokens and the timings. The stream releases its {@link Decoder} when the generation ends or when it is closed,
 * whichever comes first. Not thread-safe.
 */
public final class TokenStream implements Iterator<GeneratedToken>, AutoCloseable {
    private final Decoder decoder;
    private final Tokenizer tokenizer;
    private final GenerationOptions options;
    private final Sampler sampler;
    private final TokenDecoder text;
    private final StopStrings stops;
    private final StringBuilder output = new StringBuilder();
    private final int promptLength, limit;
    private int[] history;   // prompt, then generated ids
    private int length;      // entries of history in use
    private GeneratedToken pending;
    private FinishReason finish;
    private long prefillNanos, decodeNanos, samplingNanos;
    private int decodeSteps;
    private boolean started, closed, released;

    /**
     * A generation continuing {@code prompt} (token ids, not empty) on {@code decoder}, which must be at position 0
     * and is closed with the stream.
     *
     * @throws ContextOverflowException if the prompt, or the prompt plus a positive {@code maxTokens}, does not fit the
     *                                  decoder's context; nothing runs then
     */
    public TokenStream(Decoder decoder, Tokenizer tokenizer, int[] prompt, GenerationOptions options) {
        if (prompt.length == 0) throw new IllegalArgumentException("generate: the prompt has no tokens");
        int context = decoder.contextLength();
        if (prompt.length > context || (options.maxTokens() > 0 && (long) prompt.length + options.maxTokens() > context)) {
            throw new ContextOverflowException(decoder.position(), prompt.length + options.maxTokens(), context);
        }
        this.decoder = decoder;
        this.tokenizer = tokenizer;
        this.options = options;
        this.sampler = new Sampler(options.sampling());
        // a prompt with text before the generation: its first word keeps its leading space
        this.text = tokenizer.newDecoder(false, !tokenizer.decode(prompt, false).isEmpty());
        this.stops = new StopStrings(options.stop());
        this.promptLength = prompt.length;
        // with maxTokens 0, one token past the full context: it is chosen from the last position's logits, never run
        this.limit = options.maxTokens() > 0 ? options.maxTokens() : context - prompt.length + 1;
        this.history = Arrays.copyOf(prompt, prompt.length + Math.min(limit, 1024));
        this.length = prompt.length;
    }

    @Override
    public boolean hasNext() {
        if (pending == null && finish == null && !closed) pending = step();
        return pending != null;
    }

    @Override
    public GeneratedToken next() {
        if (!hasNext()) throw new NoSuchElementException("the generation has ended");
        GeneratedToken t = pending;
        pending = null;
        return t;
    }

    /** Runs the generation to its end, giving each step to {@code onToken}, and returns the result. */
    public GenerationResult drain(Consumer<GeneratedToken> onToken) {
        while (hasNext()) onToken.accept(next());
        return result();
    }

    /**
     * The finished generation.
     *
     * @throws IllegalStateException if it has not ended (or was closed before it did)
     */
    public GenerationResult result() {
        if (finish == null) throw new IllegalStateException("the generation has not ended" + (closed ? "; the stream was closed first" : ""));
        return new GenerationResult(output.toString(), Arrays.copyOfRange(history, promptLength, length), finish, stats());
    }

    /** The timings so far. */
    public GenerationStats stats() {
        return new GenerationStats(promptLength, length - promptLength, prefillNanos, decodeSteps, decodeNanos, samplingNanos);
    }

    private GeneratedToken step() {
        long t0 = System.nanoTime();
        float[] logits;
        if (!started) {
            started = true;
            logits = decoder.append(Arrays.copyOf(history, promptLength));
            prefillNanos = System.nanoTime() - t0;
        } else {
            logits = decoder.append(history[length - 1]);
            decodeNanos += System.nanoTime() - t0;
            decodeSteps++;
        }
        long t1 = System.nanoTime();
        int id = sampler.sample(logits, history, length);
        if (length == history.length) history = Arrays.copyOf(history, history.length * 2);
        history[length++] = id;
        int generated = length - promptLength;
        GeneratedToken out;
        if (!options.ignoreEos() && tokenizer.isEndOfGeneration(id)) {
            out = emit(id, text.finish() + "", FinishReason.END_OF_TEXT, true);
        } else {
            String released = stops.offer(text.next(id));
            if (stops.stopped()) out = emit(id, released, FinishReason.STOP_STRING, false);
            else if (generated == limit) {
                out = emit(id, released + stops.offer(text.finish()) + stops.flush(),
                        options.maxTokens() > 0 ? FinishReason.MAX_TOKENS : FinishReason.CONTEXT_FULL, false);
            } else out = emit(id, released, null, false);
        }
        samplingNanos += System.nanoTime() - t1;
        if (finish != null) release(); // a finished stream holds nothing, closed or not
        return out;
    }

    /** A step's element; at the end of text, the held-back text is flushed first. */
    private GeneratedToken emit(int id, String released, FinishReason reason, boolean endOfText) {
        String t = endOfText ? stops.offer(released) + (stops.stopped() ? "" : stops.flush()) : released;
        if (endOfText && stops.stopped()) reason = FinishReason.STOP_STRING;
        output.append(t);
        finish = reason;
        return new GeneratedToken(id, t, reason);
    }

    /** Releases the decoder; an unfinished generation ends here (its {@link #result()} is unavailable). */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        pending = null;
        release();
    }

    private void release() {
        if (released) return;
        released = true;
        decoder.close();
    }
}
