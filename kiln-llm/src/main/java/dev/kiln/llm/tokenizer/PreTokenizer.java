package dev.kiln.llm.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Cuts normalized text into words that BPE merges within (Hugging Face's {@code pre_tokenizer}; for GGUF files the
 * regexes llama.cpp selects by {@code tokenizer.ggml.pre}). Each step maps a list of pieces to a list of pieces.
 */
sealed interface PreTokenizer {
    /** A word or part of one; {@code atStart} when it begins the input text. */
    record Piece(String text, boolean atStart) {}

    List<Piece> apply(List<Piece> pieces);

    /** Leaves the text whole. */
    record None() implements PreTokenizer {
        @Override public List<Piece> apply(List<Piece> pieces) { return pieces; }
    }

    /** What a split keeps of the pattern's matches (Hugging Face's SplitDelimiterBehavior). */
    enum Behavior { ISOLATED, REMOVED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS }

    /** Splits on the matches of {@code pattern} (with {@code invert}, on what lies between them). */
    record Split(Pattern pattern, Behavior behavior, boolean invert) implements PreTokenizer {
        @Override public List<Piece> apply(List<Piece> pieces) {
            List<Piece> out = new ArrayList<>();
            for (Piece p : pieces) split(p, out);
            return out;
        }

        private void split(Piece piece, List<Piece> out) {
            String text = piece.text();
            // spans covering the text: [start, end) and whether each is a delimiter
            List<int[]> spans = new ArrayList<>();
            Matcher m = pattern.matcher(text);
            int last = 0;
            while (m.find()) {
                if (m.end() == m.start()) continue; // an empty match delimits nothing
                if (m.start() > last) spans.add(new int[] {last, m.start(), invert ? 1 : 0});
                spans.add(new int[] {m.start(), m.end(), invert ? 0 : 1});
                last = m.end();
            }
            if (last < text.length()) spans.add(new int[] {last, text.length(), invert ? 1 : 0});

            for (int[] s : join(spans, behavior)) {
                out.add(new Piece(text.substring(s[0], s[1]), piece.atStart() && s[0] == 0));
            }
        }

        /** The spans that become pieces, delimiters kept, dropped or joined to a neighbour as Hugging Face does. */
        private static List<int[]> join(List<int[]> spans, Behavior behavior) {
            if (behavior == Behavior.MERGED_WITH_NEXT) { // the mirror image of MERGED_WITH_PREVIOUS
                List<int[]> mirrored = new ArrayList<>(spans.size());
                for (int[] s : spans.reversed()) mirrored.add(new int[] {-s[1], -s[0], s[2]});
                List<int[]> joined = new ArrayList<>();
                for (int[] s : join(mirrored, Behavior.MERGED_WITH_PREVIOUS).reversed()) {
                    joined.add(new int[] {-s[1], -s[0], s[2]});
                }
                return joined;
            }
            List<int[]> kept = new ArrayList<>();
            boolean previousDelimiter = false;
            for (int[] s : spans) {
                boolean delimiter = s[2] == 1;
                int[] last = kept.isEmpty() ? null : kept.getLast();
                switch (behavior) {
                    case ISOLATED -> kept.add(s.clone());
                    case REMOVED -> { if (!delimiter) kept.add(s.clone()); }
                    case MERGED_WITH_PREVIOUS -> {
                        if (delimiter && !previousDelimiter && last != null) last[1] = s[1];
                        else kept.add(s.clone());
                    }
                    case CONTIGUOUS -> { // neighbours alike join (with invert, runs of non-matches too)
                        if (delimiter == previousDelimiter && last != null) last[1] = s[1];
                        else kept.add(s.clone());
                    }
                    case MERGED_WITH_NEXT -> throw new AssertionError("handled above");
                }
                previousDelimiter = delimiter;
            }
            return kept;
        }
    }

    /**
     * GPT-2's byte level: optionally a space before each piece that lacks one, optionally GPT-2's regex split, then
     * every byte written as its character ({@link ByteLevel}).
     */
    record ByteLevelStep(boolean addPrefixSpace, boolean useRegex) implements PreTokenizer {
        private static final Split GPT2 = new Split(SplitPatterns.compile(SplitPatterns.GPT2), Behavior.ISOLATED, false);

        @Override public List<Piece> apply(List<Piece> pieces) {
            List<Piece> spaced = pieces;
            if (addPrefixSpace) {
                spaced = new ArrayList<>(pieces.size());
                for (Piece p : pieces) {
                    spaced.add(p.text().startsWith(" ") ? p : new Piece(" " + p.text(), p.atStart()));
                }
            }
            List<Piece> split = useRegex ? GPT2.apply(spaced) : spaced;
            List<Piece> out = new ArrayList<>(split.size());
            for (Piece p : split) out.add(new Piece(ByteLevel.encode(p.text()), p.atStart()));
            return out;
        }
    }

    /** Where Metaspace puts a replacement character before a piece. */
    enum PrependScheme { ALWAYS, FIRST, NEVER }

    /** Spaces become {@code replacement} ("▁"), prefixed by the scheme, optionally split before each. */
    record Metaspace(char replacement, PrependScheme scheme, boolean split) implements PreTokenizer {
        @Override public List<Piece> apply(List<Piece> pieces) {
            List<Piece> out = new ArrayList<>();
            String rep = String.valueOf(replacement);
            for (Piece p : pieces) {
                if (p.text().isEmpty()) continue; // nothing to prefix
                String text = p.text().replace(" ", rep);
                boolean prepend = switch (scheme) {
                    case ALWAYS -> true;
                    case FIRST -> p.atStart();
                    case NEVER -> false;
                };
                if (prepend && !text.startsWith(rep)) text = rep + text;
                if (!split) {
                    out.add(new Piece(text, p.atStart()));
                    continue;
                }
                int start = 0;
                for (int i = 1; i <= text.length(); i++) {
                    if (i == text.length() || text.charAt(i) == replacement) {
                        out.add(new Piece(text.substring(start, i), p.atStart() && start == 0));
                        start = i;
                    }
                }
            }
            return out;
        }
    }

    /** Each in turn. */
    record Sequence(List<PreTokenizer> steps) implements PreTokenizer {
        public Sequence {
            steps = List.copyOf(steps);
        }

        @Override public List<Piece> apply(List<Piece> pieces) {
            for (PreTokenizer step : steps) pieces = step.apply(pieces);
            return pieces;
        }
    }
}
