package dev.kiln.llm.tokenizer;

import java.nio.charset.StandardCharsets;

/** How a token turns back into bytes: the two families write text into their vocabularies differently. */
sealed interface TextDecoding {
    /** Byte-level BPE: every character of a normal token stands for one byte (GPT-2's map). */
    record ByteLevelBytes() implements TextDecoding {}

    /**
     * SentencePiece style: "▁" stands for a space, {@code <0xXX>} tokens for one byte each.
     *
     * @param stripLeadingSpace whether the space the encoder prefixed (dummy prefix, Prepend, Metaspace) is taken
     *                          off the first decoded piece, as sentencepiece and Hugging Face's Strip decoder do
     */
    record SentencePiece(boolean stripLeadingSpace) implements TextDecoding {}

    /** Whether the first piece of a decoded text loses one leading space. */
    default boolean stripLeadingSpace() {
        return this instanceof SentencePiece sp && sp.stripLeadingSpace();
    }

    /** The bytes token text {@code text} of type {@code type} decodes to. */
    default byte[] bytesOf(String text, TokenType type) {
        byte[] raw = text.getBytes(StandardCharsets.UTF_8);
        return switch (this) {
            // control and added tokens are stored as their text in both families (llama.cpp's token_to_piece)
            case ByteLevelBytes b when type == TokenType.CONTROL || type == TokenType.USER_DEFINED
                    || type == TokenType.UNKNOWN -> raw;
            case ByteLevelBytes b -> {
                byte[] bytes = ByteLevel.decode(text);
                yield bytes != null ? bytes : raw;
            }
            case SentencePiece s when type == TokenType.BYTE && byteValue(text) >= 0 ->
                    new byte[] {(byte) byteValue(text)};
            case SentencePiece s when type == TokenType.NORMAL || type == TokenType.UNUSED ->
                    text.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8);
            case SentencePiece s -> raw;
        };
    }

    /** The byte a {@code <0xXX>} token stands for, or -1 if the text is not of that form. */
    static int byteValue(String text) {
        if (text.length() != 6 || !text.startsWith("<0x") || text.charAt(5) != '>') return -1;
        int hi = Character.digit(text.charAt(3), 16);
        int lo = Character.digit(text.charAt(4), 16);
        return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
    }
}
