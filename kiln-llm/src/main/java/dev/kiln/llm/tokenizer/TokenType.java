package dev.kiln.llm.tokenizer;

/**
 * What a vocabulary entry is, with the codes of GGUF's {@code tokenizer.ggml.token_type} (llama.cpp's
 * {@code llama_token_type}). Hugging Face {@code tokenizer.json} files map onto the same kinds: special added tokens
 * are {@link #CONTROL}, other added tokens {@link #USER_DEFINED}, {@code <0xXX>} entries of a byte-fallback
 * vocabulary {@link #BYTE}.
 */
public enum TokenType {
    /** Ordinary text. */
    NORMAL(1),
    /** The unknown token, used for text the vocabulary cannot spell. */
    UNKNOWN(2),
    /** A control token such as BOS or EOS: recognised in text only when special tokens are parsed. */
    CONTROL(3),
    /** A token the model's authors added as text: always recognised in text, decoded as its text. */
    USER_DEFINED(4),
    /** A reserved entry that ordinary text does not produce. */
    UNUSED(5),
    /** One raw byte, written {@code <0xXX>}: SentencePiece's byte fallback. */
    BYTE(6);

    private final int ggufCode;

    TokenType(int ggufCode) { this.ggufCode = ggufCode; }

    /** The value GGUF stores for this type. */
    public int ggufCode() { return ggufCode; }

    /** The type GGUF code {@code code} stands for, or {@code null} if it stands for none. */
    static TokenType ofGgufCode(long code) {
        for (TokenType t : values()) if (t.ggufCode == code) return t;
        return null;
    }
}
