package dev.kiln.llm.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * GPT-2's reversible byte-to-character map. Byte-level BPE works on the UTF-8 bytes of the text, but its vocabulary
 * and merges are strings; each byte is written as one printable character (printable Latin-1 bytes as themselves,
 * the other 68 as U+0100 onwards), so every byte sequence becomes a string and back.
 */
final class ByteLevel {
    private ByteLevel() {}

    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[324];

    static {
        Arrays.fill(CHAR_TO_BYTE, -1);
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) (256 + extra++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    /** The text's UTF-8 bytes, each written as its character. */
    static String encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        char[] out = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) out[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        return new String(out);
    }

    /** The character byte {@code b} is written as. */
    static char charOf(int b) { return BYTE_TO_CHAR[b]; }

    /**
     * The bytes a byte-level token stands for, or {@code null} if one of its characters is not in the map (Hugging
     * Face's ByteLevel decoder then takes the token's own UTF-8 bytes).
     */
    static byte[] decode(String token) {
        byte[] out = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c >= CHAR_TO_BYTE.length || CHAR_TO_BYTE[c] < 0) return null;
            out[i] = (byte) CHAR_TO_BYTE[c];
        }
        return out;
    }
}
