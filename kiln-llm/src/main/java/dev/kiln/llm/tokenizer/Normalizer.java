package dev.kiln.llm.tokenizer;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Rewrites each text segment before pre-tokenization (Hugging Face's {@code normalizer}). */
sealed interface Normalizer {
    String apply(String text);

    /** Leaves text as it is. */
    record Identity() implements Normalizer {
        @Override public String apply(String text) { return text; }
    }

    /** Puts {@code prefix} before non-empty text (Llama 2's "▁" dummy prefix). */
    record Prepend(String prefix) implements Normalizer {
        @Override public String apply(String text) { return text.isEmpty() ? text : prefix + text; }
    }

    /** Replaces every match of {@code pattern} by {@code content} literally (spaces by "▁"). */
    record Replace(Pattern pattern, String content) implements Normalizer {
        @Override public String apply(String text) {
            return pattern.matcher(text).replaceAll(Matcher.quoteReplacement(content));
        }
    }

    /** A Unicode normalization form (Qwen2 applies NFC). */
    record Unicode(java.text.Normalizer.Form form) implements Normalizer {
        @Override public String apply(String text) { return java.text.Normalizer.normalize(text, form); }
    }

    /** Each in turn. */
    record Sequence(List<Normalizer> steps) implements Normalizer {
        public Sequence {
            steps = List.copyOf(steps);
        }

        @Override public String apply(String text) {
            for (Normalizer n : steps) text = n.apply(text);
            return text;
        }
    }
}
