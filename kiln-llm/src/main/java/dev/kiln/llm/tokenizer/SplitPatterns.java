package dev.kiln.llm.tokenizer;

import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The pre-tokenizer regexes of the byte-level BPE families, as their {@code tokenizer.json} files write them
 * (Oniguruma syntax), and their translation to {@link java.util.regex}.
 *
 * <p>Hugging Face runs these patterns through Oniguruma, where {@code \s}, {@code \d} and {@code \w} are Unicode
 * classes ({@code \s} is White_Space: U+00A0, U+3000, U+2028 and U+0085 included, U+200B not) and {@code (?i)}
 * folds case by Unicode rules ({@code 'ſ} matches {@code 's}). Java's defaults are ASCII, so patterns are compiled
 * with {@link Pattern#UNICODE_CHARACTER_CLASS}, which gives the same classes and Unicode case folding; the golden
 * tests check this on the tricky characters. Oniguruma's {@code \h} (a hex digit, Java's horizontal space) is
 * rewritten.
 */
final class SplitPatterns {
    private SplitPatterns() {}

    /** Llama 3 (GGUF pre "llama-bpe", "llama3", "llama-v3"); also DBRX and Smaug. */
    static final String LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Qwen2 and Qwen2.5: Llama 3's pattern with single digits. */
    static final String QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** GPT-2 (Hugging Face's ByteLevel pre-tokenizer with use_regex). */
    static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    /** Single digits (Hugging Face's Digits pre-tokenizer with individual_digits; Rust's is_numeric is \p{N}). */
    static final String DIGIT = "\\p{N}";
    /** Runs of digits (Digits without individual_digits). */
    static final String DIGITS = "\\p{N}+";
    /**
     * llama.cpp's patterns for a GGUF byte-level vocabulary without a known pre-tokenizer name, applied one after
     * the other.
     */
    static final List<String> LLAMA_CPP_DEFAULT = List.of("[\\p{P}\\$\\+<=>\\^~\\|]+",
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "\\p{N}+",
            "[0-9][0-9][0-9]");

    /**
     * The Oniguruma pattern {@code onig} compiled for Java.
     *
     * @throws PatternSyntaxException if Java cannot compile it
     */
    static Pattern compile(String onig) {
        StringBuilder java = new StringBuilder(onig.length() + 16);
        for (int i = 0; i < onig.length(); i++) {
            char c = onig.charAt(i);
            if (c == '\\' && i + 1 < onig.length()) {
                char next = onig.charAt(++i);
                switch (next) {
                    case 'h' -> java.append("[0-9a-fA-F]");
                    case 'H' -> java.append("[^0-9a-fA-F]");
                    default -> java.append(c).append(next);
                }
            } else {
                java.append(c);
            }
        }
        return Pattern.compile(java.toString(), Pattern.UNICODE_CHARACTER_CLASS);
    }
}
