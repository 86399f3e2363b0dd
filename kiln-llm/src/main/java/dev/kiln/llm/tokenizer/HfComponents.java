package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The pipeline steps of a {@code tokenizer.json}: normalizer, pre-tokenizer, post-processor and decoder, for the
 * component types the supported model families use. Any other type is an error naming the field and the type.
 */
final class HfComponents {
    private final JsonFields f;

    HfComponents(JsonFields f) {
        this.f = f;
    }

    /** The tokens a post-processor puts before and after every text. */
    record Specials(int[] prefix, int[] suffix) {
        static final Specials NONE = new Specials(new int[0], new int[0]);
    }

    Normalizer normalizer(JsonNode node, String field) {
        if (node == null || node.isNull()) return new Normalizer.Identity();
        String type = f.string(node, "type", field + ".type");
        return switch (type) {
            case "Sequence" -> {
                JsonNode steps = f.array(node, "normalizers", field + ".normalizers", 64);
                List<Normalizer> list = new ArrayList<>();
                for (int i = 0; i < steps.size(); i++) list.add(normalizer(steps.get(i), field + ".normalizers[" + i + "]"));
                yield new Normalizer.Sequence(list);
            }
            case "Prepend" -> new Normalizer.Prepend(f.string(node, "prepend", field + ".prepend"));
            case "Replace" -> new Normalizer.Replace(pattern(node, field), f.string(node, "content", field + ".content"));
            case "NFC" -> new Normalizer.Unicode(java.text.Normalizer.Form.NFC);
            case "NFD" -> new Normalizer.Unicode(java.text.Normalizer.Form.NFD);
            case "NFKC" -> new Normalizer.Unicode(java.text.Normalizer.Form.NFKC);
            case "NFKD" -> new Normalizer.Unicode(java.text.Normalizer.Form.NFKD);
            default -> throw f.error(field + ".type", "expected Sequence, Prepend, Replace, NFC, NFD, NFKC or NFKD, "
                    + "found \"" + type + "\"");
        };
    }

    PreTokenizer preTokenizer(JsonNode node, String field) {
        if (node == null || node.isNull()) return new PreTokenizer.None();
        String type = f.string(node, "type", field + ".type");
        return switch (type) {
            case "Sequence" -> {
                JsonNode steps = f.array(node, "pretokenizers", field + ".pretokenizers", 64);
                List<PreTokenizer> list = new ArrayList<>();
                for (int i = 0; i < steps.size(); i++) {
                    list.add(preTokenizer(steps.get(i), field + ".pretokenizers[" + i + "]"));
                }
                yield new PreTokenizer.Sequence(list);
            }
            case "Split" -> new PreTokenizer.Split(pattern(node, field), behavior(node, field),
                    f.bool(node, "invert", field + ".invert", false));
            case "ByteLevel" -> new PreTokenizer.ByteLevelStep(
                    f.bool(node, "add_prefix_space", field + ".add_prefix_space", true),
                    f.bool(node, "use_regex", field + ".use_regex", true));
            case "Digits" -> new PreTokenizer.Split(SplitPatterns.compile(
                    f.bool(node, "individual_digits", field + ".individual_digits", false)
                            ? SplitPatterns.DIGIT : SplitPatterns.DIGITS), PreTokenizer.Behavior.ISOLATED, false);
            case "Metaspace" -> new PreTokenizer.Metaspace(replacement(node, field), prependScheme(node, field),
                    f.bool(node, "split", field + ".split", true));
            default -> throw f.error(field + ".type", "expected Sequence, Split, ByteLevel, Digits or Metaspace, found \""
                    + type + "\"");
        };
    }

    /** How tokens turn back into text, from the decoder (ByteLevel; or Replace/ByteFallback/Fuse/Strip; Metaspace). */
    TextDecoding decoding(JsonNode node, String field) {
        if (node == null || node.isNull()) {
            throw f.error(field, "expected a decoder (ByteLevel, Metaspace or a Sequence of Replace, ByteFallback, "
                    + "Fuse and Strip), found nothing");
        }
        List<JsonNode> steps = new ArrayList<>();
        if ("Sequence".equals(f.string(node, "type", field + ".type"))) {
            JsonNode list = f.array(node, "decoders", field + ".decoders", 64);
            for (JsonNode step : list) steps.add(step);
        } else {
            steps.add(node);
        }
        boolean byteLevel = false;
        boolean strip = false;
        for (int i = 0; i < steps.size(); i++) {
            JsonNode step = steps.get(i);
            String at = node == step ? field : field + ".decoders[" + i + "]";
            String type = f.string(step, "type", at + ".type");
            switch (type) {
                case "ByteLevel" -> byteLevel = true;
                case "ByteFallback", "Fuse" -> { }
                case "Replace" -> {
                    JsonNode pattern = f.object(step, "pattern", at + ".pattern");
                    String from = f.optionalString(pattern, "String", at + ".pattern.String");
                    String to = f.string(step, "content", at + ".content");
                    if (!"\u2581".equals(from) || !" ".equals(to)) {
                        throw f.error(at, "expected a Replace of \"\u2581\" by \" \", found " + step);
                    }
                }
                case "Strip" -> {
                    String content = f.string(step, "content", at + ".content");
                    int start = f.integer(step.get("start"), at + ".start", 0, 1);
                    f.integer(step.get("stop"), at + ".stop", 0, 0);
                    if (!" ".equals(content)) throw f.error(at + ".content", "expected \" \", found \"" + content + "\"");
                    strip |= start == 1;
                }
                case "Metaspace" -> {
                    if (replacement(step, at) != '\u2581') throw f.error(at + ".replacement", "expected \"\u2581\"");
                    strip |= prependScheme(step, at) != PreTokenizer.PrependScheme.NEVER;
                }
                default -> throw f.error(at + ".type", "expected ByteLevel, ByteFallback, Fuse, Replace, Strip or "
                        + "Metaspace, found \"" + type + "\"");
            }
        }
        return byteLevel ? new TextDecoding.ByteLevelBytes() : new TextDecoding.SentencePiece(strip);
    }

    /** The special tokens of the post-processor: TemplateProcessing's single template, Roberta/Bert's cls and sep. */
    Specials specials(JsonNode node, String field, int vocabularySize) {
        if (node == null || node.isNull()) return Specials.NONE;
        String type = f.string(node, "type", field + ".type");
        return switch (type) {
            case "ByteLevel" -> Specials.NONE; // only adjusts offsets
            case "Sequence" -> {
                JsonNode steps = f.array(node, "processors", field + ".processors", 64);
                Specials result = Specials.NONE;
                for (int i = 0; i < steps.size(); i++) {
                    Specials s = specials(steps.get(i), field + ".processors[" + i + "]", vocabularySize);
                    if (s != Specials.NONE) result = s;
                }
                yield result;
            }
            case "TemplateProcessing" -> template(node, field, vocabularySize);
            case "RobertaProcessing", "BertProcessing" -> new Specials(
                    new int[] {pairId(node, "cls", field, vocabularySize)},
                    new int[] {pairId(node, "sep", field, vocabularySize)});
            default -> throw f.error(field + ".type", "expected TemplateProcessing, ByteLevel, RobertaProcessing, "
                    + "BertProcessing or Sequence, found \"" + type + "\"");
        };
    }

    private Specials template(JsonNode node, String field, int vocabularySize) {
        JsonNode single = f.array(node, "single", field + ".single", 64);
        JsonNode tokens = f.object(node, "special_tokens", field + ".special_tokens");
        List<Integer> prefix = new ArrayList<>();
        List<Integer> suffix = new ArrayList<>();
        boolean seenSequence = false;
        for (int i = 0; i < single.size(); i++) {
            String at = field + ".single[" + i + "]";
            JsonNode piece = single.get(i);
            if (piece.has("Sequence")) {
                if (seenSequence) throw f.error(at, "expected one sequence in the single template, found two");
                seenSequence = true;
                continue;
            }
            String name = f.string(f.object(piece, "SpecialToken", at + ".SpecialToken"), "id", at + ".SpecialToken.id");
            JsonNode entry = tokens.get(name);
            if (entry == null) throw f.error(at, "expected a token of special_tokens, found \"" + name + "\"");
            JsonNode ids = f.array(entry, "ids", field + ".special_tokens." + name + ".ids", 64);
            for (int k = 0; k < ids.size(); k++) {
                int id = f.integer(ids.get(k), field + ".special_tokens." + name + ".ids[" + k + "]", 0,
                        vocabularySize - 1);
                (seenSequence ? suffix : prefix).add(id);
            }
        }
        if (!seenSequence) throw f.error(field + ".single", "expected a template with the sequence $A, found none");
        return new Specials(prefix.stream().mapToInt(Integer::intValue).toArray(),
                suffix.stream().mapToInt(Integer::intValue).toArray());
    }

    private int pairId(JsonNode node, String name, String field, int vocabularySize) {
        JsonNode pair = f.array(node, name, field + "." + name, 2);
        if (pair.size() != 2) throw f.error(field + "." + name, "expected [token, id], found " + pair);
        return f.integer(pair.get(1), field + "." + name + "[1]", 0, vocabularySize - 1);
    }

    private Pattern pattern(JsonNode node, String field) {
        JsonNode pattern = f.object(node, "pattern", field + ".pattern");
        if (JsonFields.has(pattern, "String")) {
            return Pattern.compile(f.string(pattern, "String", field + ".pattern.String"), Pattern.LITERAL);
        }
        String regex = f.string(pattern, "Regex", field + ".pattern.Regex");
        try {
            return SplitPatterns.compile(regex);
        } catch (PatternSyntaxException e) {
            throw f.error(field + ".pattern.Regex", "expected a regex Java can compile, found \"" + regex + "\" ("
                    + e.getDescription() + ")");
        }
    }

    private PreTokenizer.Behavior behavior(JsonNode node, String field) {
        String b = f.string(node, "behavior", field + ".behavior");
        return switch (b) {
            case "Isolated" -> PreTokenizer.Behavior.ISOLATED;
            case "Removed" -> PreTokenizer.Behavior.REMOVED;
            case "MergedWithPrevious" -> PreTokenizer.Behavior.MERGED_WITH_PREVIOUS;
            case "MergedWithNext" -> PreTokenizer.Behavior.MERGED_WITH_NEXT;
            case "Contiguous" -> PreTokenizer.Behavior.CONTIGUOUS;
            default -> throw f.error(field + ".behavior", "expected Isolated, Removed, MergedWithPrevious, "
                    + "MergedWithNext or Contiguous, found \"" + b + "\"");
        };
    }

    private char replacement(JsonNode node, String field) {
        String r = f.string(node, "replacement", field + ".replacement");
        if (r.length() != 1) throw f.error(field + ".replacement", "expected one character, found \"" + r + "\"");
        return r.charAt(0);
    }

    /** Newer files say prepend_scheme; older ones add_prefix_space (true meaning "always"). */
    private PreTokenizer.PrependScheme prependScheme(JsonNode node, String field) {
        String scheme = f.optionalString(node, "prepend_scheme", field + ".prepend_scheme");
        if (scheme == null) {
            return f.bool(node, "add_prefix_space", field + ".add_prefix_space", true)
                    ? PreTokenizer.PrependScheme.ALWAYS : PreTokenizer.PrependScheme.NEVER;
        }
        return switch (scheme) {
            case "always" -> PreTokenizer.PrependScheme.ALWAYS;
            case "first" -> PreTokenizer.PrependScheme.FIRST;
            case "never" -> PreTokenizer.PrependScheme.NEVER;
            default -> throw f.error(field + ".prepend_scheme", "expected always, first or never, found \"" + scheme + "\"");
        };
    }
}
