package dev.kiln.llm.tokenizer;

import java.util.Arrays;

/**
 * Turns token ids into text one at a time, as a model generates them. A token may end inside a character (byte-level
 * BPE and byte fallback split characters into bytes), so the bytes of an unfinished character are held back until the
 * tokens that complete it arrive: what {@link #next} returns never ends in a broken UTF-8 sequence, and the texts
 * returned by {@link #next} and {@link #finish} together equal {@link Tokenizer#decode(int[], boolean)} of all the ids.
 * Bytes that can never form a character become U+FFFD, as in {@code decode}. Not thread-safe: one per stream.
 */
public final class TokenDecoder {
    private final Tokenizer tokenizer;
    private final boolean renderSpecial;
    private byte[] pending = new byte[8];
    private int pendingLength;
    private boolean atStart = true;

    /** @param continuing the ids continue a text (a prompt's): a word's leading space is kept on the first one too */
    TokenDecoder(Tokenizer tokenizer, boolean renderSpecial, boolean continuing) {
        this.tokenizer = tokenizer;
        this.renderSpecial = renderSpecial;
        this.atStart = !continuing;
    }

    /**
     * The text that token {@code id} completes: possibly empty (the token is special and not rendered, or ends
     * inside a character), possibly including characters begun by earlier tokens.
     *
     * @throws IllegalArgumentException if {@code id} is not in the vocabulary
     */
    public String next(int id) {
        byte[] piece = tokenizer.pieceBytes(id, renderSpecial);
        if (piece == null) return "";
        int from = atStart ? tokenizer.leadingSpaceToStrip(piece) : 0;
        atStart = false;
        int n = piece.length - from;
        if (pendingLength + n > pending.length) pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLength + n));
        System.arraycopy(piece, from, pending, pendingLength, n);
        pendingLength += n;
        int complete = Utf8.incompleteTailStart(pending, pendingLength);
        String text = Utf8.decode(pending, 0, complete);
        System.arraycopy(pending, complete, pending, 0, pendingLength - complete);
        pendingLength -= complete;
        return text;
    }

    /**
     * The held bytes of an unfinished character, each maximal malformed part as U+FFFD (empty if none), after which
     * this decoder starts a new text.
     */
    public String finish() {
        String text = Utf8.decode(pending, 0, pendingLength);
        pendingLength = 0;
        atStart = true;
        return text;
    }
}
