package dev.kiln.llm.tokenizer;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.nio.ByteBuffer;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Properties over random text: byte-level BPE and SentencePiece with byte fallback lose nothing
 * ({@code decode(encode(s)) == s}); streaming decoding gives decode's text and, for valid input, never U+FFFD; the
 * UTF-8 decoder agrees with the JDK's.
 */
class TokenizerPropertiesTest {
    private static final Tokenizer LLAMA3_JSON =
            Tokenizer.fromTokenizerJson(Fixtures.dir("llama3").resolve("tokenizer.json"));
    private static final Tokenizer LLAMA3_GGUF = Tokenizer.fromGguf(Fixtures.ggufMetadata("llama3"));
    private static final Tokenizer QWEN2_GGUF = Tokenizer.fromGguf(Fixtures.ggufMetadata("qwen2"));
    private static final Tokenizer SPM_GGUF = Tokenizer.fromGguf(Fixtures.ggufMetadata("spm"));
    private static final Tokenizer SPM_JSON =
            Tokenizer.fromTokenizerJson(Fixtures.dir("spm_hf_legacy").resolve("tokenizer.json"));

    /** Text weighted towards what tokenizers find hard: whitespace runs, marks, CJK, emoji sequences. */
    @Provide
    Arbitrary<String> text() {
        Arbitrary<String> piece = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(6, Arbitraries.strings().withCharRange('a', 'z').withChars(" .,'!?0123456789")
                        .ofMinLength(1).ofMaxLength(8)),
                net.jqwik.api.Tuple.of(3, Arbitraries.of(" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028",
                        "\u0085", "\u200b", "'s", "'LL", "'\u017f")),
                net.jqwik.api.Tuple.of(2, Arbitraries.strings().withCharRange('\u00c0', '\u024f').ofMaxLength(4)),
                net.jqwik.api.Tuple.of(2, Arbitraries.strings().withCharRange('\u4e00', '\u4fff').ofMaxLength(4)),
                net.jqwik.api.Tuple.of(2, Arbitraries.of("\uD83D\uDC4B\uD83C\uDFFD", "\uD83D\uDC68\u200d\uD83D\uDC69\u200d\uD83D\uDC67",
                        "\u2764\ufe0f", "\uD83C\uDDEB\uD83C\uDDF7", "e\u0301", "\u0645\u0631\u062d\u0628\u0627")),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 0x10FFFF)
                        .filter(cp -> cp < 0xD800 || cp > 0xDFFF).map(Character::toString)));
        return piece.list().ofMaxSize(12).map(list -> String.join("", list));
    }

    @Property(tries = 300)
    void byteLevelLosesNothing(@ForAll("text") String s) {
        for (Tokenizer t : List.of(LLAMA3_JSON, LLAMA3_GGUF, QWEN2_GGUF)) {
            int[] ids = t.encode(s, false, false);
            assertThat(t.decode(ids, true)).isEqualTo(s);
            assertThat(streamedChunks(t, ids, true)).allSatisfy(c -> assertThat(c).doesNotContain("\uFFFD"))
                    .satisfies(chunks -> assertThat(String.join("", chunks)).isEqualTo(s));
        }
    }

    @Property(tries = 300)
    void sentencePieceWithByteFallbackLosesNothing(@ForAll("text") String s) {
        String text = s.replace('\u2581', ' '); // "▁" is how the vocabulary writes a space: it decodes to one
        for (Tokenizer t : List.of(SPM_GGUF, SPM_JSON)) {
            int[] ids = t.encode(text, true, false);
            assertThat(t.decode(ids)).isEqualTo(text);
            assertThat(streamedChunks(t, ids, false)).allSatisfy(c -> assertThat(c).doesNotContain("\uFFFD"))
                    .satisfies(chunks -> assertThat(String.join("", chunks)).isEqualTo(text));
        }
    }

    @Property(tries = 300)
    void streamingAnyIdsGivesDecodesText(@ForAll @Size(max = 40) List<@IntRange(max = 999) Integer> ids,
                                         @ForAll boolean renderSpecial) {
        int[] array = ids.stream().mapToInt(Integer::intValue).toArray();
        for (Tokenizer t : List.of(LLAMA3_GGUF, SPM_GGUF, SPM_JSON)) {
            assertThat(String.join("", streamedChunks(t, array, renderSpecial)))
                    .isEqualTo(t.decode(array, renderSpecial));
        }
    }

    @Property(tries = 300)
    void utf8DecodingOfValidTextMatchesTheJdk(@ForAll("text") String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        assertThat(Utf8.decode(bytes, 0, bytes.length)).isEqualTo(jdkDecode(bytes)).isEqualTo(s);
    }

    /**
     * Malformed bytes are checked against Python's decoder in {@code TokenizerApiTest}; the JDK's is no oracle there
     * (it replaces ED BF, a surrogate's start, as one unit where the Unicode practice and Rust's decoder see two).
     */
    @Property(tries = 1000)
    void utf8DecodingStreams(@ForAll @Size(max = 24) byte[] bytes, @ForAll @IntRange(max = 24) int cut) {
        String whole = Utf8.decode(bytes, 0, bytes.length);
        // cutting where an unfinished character starts (or at the end) never changes the text
        int end = Math.min(cut, bytes.length);
        int boundary = Utf8.incompleteTailStart(bytes, end);
        assertThat(Utf8.decode(bytes, 0, boundary) + Utf8.decode(bytes, boundary, bytes.length)).isEqualTo(whole);
    }

    private static String jdkDecode(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(CodingErrorAction.REPLACE).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new AssertionError(e);
        }
    }

    private static List<String> streamedChunks(Tokenizer tokenizer, int[] ids, boolean renderSpecial) {
        TokenDecoder decoder = tokenizer.newDecoder(renderSpecial);
        List<String> chunks = new java.util.ArrayList<>();
        for (int id : ids) chunks.add(decoder.next(id));
        chunks.add(decoder.finish());
        return chunks;
    }
}
