package dev.kiln.llm.tokenizer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Cuts text at the texts of special and added tokens before the model sees it, taking the leftmost and then the
 * longest match (Hugging Face's added vocabulary; llama.cpp agrees except when special texts overlap).
 * {@link TokenType#USER_DEFINED} tokens are always cut out; {@link TokenType#CONTROL} and
 * {@link TokenType#UNKNOWN} ones only when special tokens are parsed, otherwise they are plain text.
 */
final class SpecialSplitter {
    /** A piece of the split text. */
    sealed interface Segment {
        /** Text for the model; {@code atStart} when it begins the input (Metaspace's "first" prepend scheme). */
        record Text(String text, boolean atStart) implements Segment {}

        /** A special or added token found in the text. */
        record Token(int id) implements Segment {}
    }

    /**
     * How an added token of a {@code tokenizer.json} matches: {@code lstrip}/{@code rstrip} swallow the whitespace
     * before/after it, {@code singleWord} matches only outside words.
     */
    record Flags(boolean lstrip, boolean rstrip, boolean singleWord) {
        static final Flags NONE = new Flags(false, false, false);
    }

    private static final class Node {
        final Map<Character, Node> next = new HashMap<>(4);
        int id = -1;
    }

    private final Node always = new Node();
    private final Node parsing = new Node();
    private final Map<Integer, Flags> flags;

    SpecialSplitter(Vocabulary vocab, Map<Integer, Flags> flags) {
        this.flags = Map.copyOf(flags);
        for (int id = 0; id < vocab.size(); id++) {
            TokenType type = vocab.type(id);
            String text = vocab.text(id);
            if (text.isEmpty()) continue;
            if (type == TokenType.USER_DEFINED) insert(always, text, id);
            if (type == TokenType.USER_DEFINED || type == TokenType.CONTROL || type == TokenType.UNKNOWN) {
                insert(parsing, text, id);
            }
        }
    }

    private static void insert(Node root, String text, int id) {
        Node node = root;
        for (int i = 0; i < text.length(); i++) node = node.next.computeIfAbsent(text.charAt(i), c -> new Node());
        if (node.id < 0) node.id = id; // two ids with one text: the first wins, as in a vocabulary lookup
    }

    List<Segment> split(String text, boolean parseSpecial) {
        Node root = parseSpecial ? parsing : always;
        List<Segment> out = new ArrayList<>();
        if (root.next.isEmpty()) {
            if (!text.isEmpty()) out.add(new Segment.Text(text, true));
            return out;
        }
        int textStart = 0;
        int i = 0;
        while (i < text.length()) {
            int end = -1;
            int id = -1;
            Node node = root;
            for (int j = i; j < text.length(); j++) {
                node = node.next.get(text.charAt(j));
                if (node == null) break;
                if (node.id >= 0 && fits(text, i, j + 1, node.id)) {
                    end = j + 1;
                    id = node.id;
                }
            }
            if (id < 0) {
                i++;
                continue;
            }
            Flags f = flags.getOrDefault(id, Flags.NONE);
            int before = i;
            if (f.lstrip()) while (before > textStart && isWhiteSpace(text.charAt(before - 1))) before--;
            if (before > textStart) out.add(new Segment.Text(text.substring(textStart, before), textStart == 0));
            out.add(new Segment.Token(id));
            if (f.rstrip()) while (end < text.length() && isWhiteSpace(text.charAt(end))) end++;
            textStart = end;
            i = end;
        }
        if (textStart < text.length()) out.add(new Segment.Text(text.substring(textStart), textStart == 0));
        return out;
    }

    /** A single-word token must not touch word characters on either side. */
    private boolean fits(String text, int start, int end, int id) {
        if (!flags.getOrDefault(id, Flags.NONE).singleWord()) return true;
        return (start == 0 || !isWordChar(text.codePointBefore(start)))
                && (end == text.length() || !isWordChar(text.codePointAt(end)));
    }

    /** Unicode White_Space, as Rust's char::is_whitespace (Java's isWhitespace leaves out no-break spaces). */
    private static boolean isWhiteSpace(char c) {
        return WHITE_SPACE.matcher(String.valueOf(c)).matches();
    }

    private static final Pattern WHITE_SPACE = Pattern.compile("\\p{IsWhite_Space}");

    private static boolean isWordChar(int cp) {
        return Character.isLetterOrDigit(cp) || cp == '_';
    }
}
