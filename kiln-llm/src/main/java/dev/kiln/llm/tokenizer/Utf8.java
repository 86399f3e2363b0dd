package dev.kiln.llm.tokenizer;

/**
 * UTF-8 decoding for token bytes. Tokens split characters anywhere (byte-level BPE, byte fallback), so decoding must
 * replace what is malformed and find where an unfinished character starts. Replacement follows the Unicode
 * "maximal subpart" practice, as Rust's {@code String::from_utf8_lossy} (Hugging Face decoders) does: every
 * maximal prefix of a well-formed sequence that cannot be completed becomes one U+FFFD. Because a lead byte always
 * ends such a prefix, decoding up to any lead byte and then the rest gives the same text as decoding everything at
 * once, which is what lets {@link TokenDecoder} stream.
 */
final class Utf8 {
    private Utf8() {}

    static final char REPLACEMENT = '\uFFFD';

    /** The bytes decoded, malformed sequences replaced by U+FFFD. */
    static String decode(byte[] bytes, int from, int to) {
        StringBuilder out = new StringBuilder(to - from);
        int i = from;
        while (i < to) {
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                out.append((char) b);
                i++;
                continue;
            }
            int need = sequenceLength(b);
            int valid = validPrefix(bytes, i, Math.min(to, i + need));
            if (need == 0 || valid < need) {
                out.append(REPLACEMENT);
                i += Math.max(1, valid);
                continue;
            }
            int cp = switch (need) {
                case 2 -> (b & 0x1F) << 6 | (bytes[i + 1] & 0x3F);
                case 3 -> (b & 0x0F) << 12 | (bytes[i + 1] & 0x3F) << 6 | (bytes[i + 2] & 0x3F);
                default -> (b & 0x07) << 18 | (bytes[i + 1] & 0x3F) << 12 | (bytes[i + 2] & 0x3F) << 6
                        | (bytes[i + 3] & 0x3F);
            };
            out.appendCodePoint(cp);
            i += need;
        }
        return out.toString();
    }

    /**
     * Where an unfinished but so far well-formed character starts at the end of {@code bytes[0, length)}, or
     * {@code length} if the bytes end on a character boundary (or on malformed bytes, which no later byte can fix).
     */
    static int incompleteTailStart(byte[] bytes, int length) {
        for (int k = 1; k <= Math.min(3, length); k++) {
            int p = length - k;
            int b = bytes[p] & 0xFF;
            if ((b & 0xC0) == 0x80) continue; // a continuation byte: the lead is further back
            int need = sequenceLength(b);
            return need > k && validPrefix(bytes, p, length) == k ? p : length;
        }
        return length;
    }

    /** The length a lead byte announces: 1 for ASCII, 2 to 4, or 0 for a byte no sequence starts with. */
    private static int sequenceLength(int b) {
        if (b < 0x80) return 1;
        if (b >= 0xC2 && b <= 0xDF) return 2;
        if (b >= 0xE0 && b <= 0xEF) return 3;
        if (b >= 0xF0 && b <= 0xF4) return 4;
        return 0;
    }

    /** How many bytes from {@code start} (before {@code end}) form a well-formed prefix of one character. */
    private static int validPrefix(byte[] bytes, int start, int end) {
        int lead = bytes[start] & 0xFF;
        if (sequenceLength(lead) == 0) return 0;
        int n = 1;
        for (int i = start + 1; i < end; i++, n++) {
            int b = bytes[i] & 0xFF;
            int lo = 0x80;
            int hi = 0xBF;
            if (n == 1) { // the second byte excludes overlong forms, surrogates and code points past U+10FFFF
                if (lead == 0xE0) lo = 0xA0;
                else if (lead == 0xED) hi = 0x9F;
                else if (lead == 0xF0) lo = 0x90;
                else if (lead == 0xF4) hi = 0x8F;
            }
            if (b < lo || b > hi) break;
        }
        return n;
    }
}
