package dev.kiln.llm.tokenizer;

/**
 * The ids of a vocabulary's special tokens; {@link #NONE} where the vocabulary has no such token.
 *
 * @param bos beginning of sequence
 * @param eos end of sequence
 * @param eot end of turn (Llama 3's {@code <|eot_id|>}, ChatML's {@code <|im_end|>}), where present
 * @param eom end of message (Llama 3.1's {@code <|eom_id|>}), where present
 * @param pad padding
 * @param unk the unknown token
 */
public record SpecialTokens(int bos, int eos, int eot, int eom, int pad, int unk) {
    /** The id of a special token the vocabulary does not have. */
    public static final int NONE = -1;

    /** Whether there is a BOS token. */
    public boolean hasBos() { return bos != NONE; }

    /** Whether there is an EOS token. */
    public boolean hasEos() { return eos != NONE; }
}
