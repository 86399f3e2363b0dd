package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

/**
 * Token-for-token equality with the references gen_tokenizers.py recorded: sentencepiece (with llama.cpp's special
 * token split) for the GGUF SentencePiece vocabulary, Hugging Face {@code tokenizers} for every tokenizer.json and the
 * byte-level GGUF vocabularies. Each case also checks the decodings and that streaming decoding gives the same text.
 */
class TokenizerGoldenTest {
    @TempDir
    static Path temp;

    @TestFactory
    Stream<DynamicTest> spmFromGguf() {
        return check("spm gguf", Tokenizer.fromGguf(Fixtures.ggufMetadata("spm")), Fixtures.cases("spm", "cases"));
    }

    @TestFactory
    Stream<DynamicTest> spmLegacyTokenizerJson() {
        return check("spm legacy json", Tokenizer.fromTokenizerJson(Fixtures.dir("spm_hf_legacy").resolve("tokenizer.json")),
                Fixtures.cases("spm_hf_legacy", "cases"));
    }

    @TestFactory
    Stream<DynamicTest> spmMetaspaceTokenizerJson() {
        Tokenizer json = Tokenizer.fromTokenizerJson(Fixtures.dir("spm_hf_metaspace").resolve("tokenizer.json"));
        return Stream.concat(check("spm metaspace json", json, Fixtures.cases("spm_hf_metaspace", "cases")),
                preTokenized("spm metaspace json", json, "spm_hf_metaspace"));
    }

    @TestFactory
    Stream<DynamicTest> llama3() {
        return byteLevel("llama3");
    }

    @TestFactory
    Stream<DynamicTest> qwen2() {
        return byteLevel("qwen2");
    }

    @TestFactory
    Stream<DynamicTest> smollm() throws Exception {
        return variant("smollm");
    }

    @TestFactory
    Stream<DynamicTest> gpt2() throws Exception {
        return variant("gpt2");
    }

    /** tokenizer.json and GGUF metadata of one trained byte-level tokenizer, plus raw id sequences to decode. */
    private Stream<DynamicTest> byteLevel(String name) {
        Tokenizer json = Tokenizer.fromTokenizerJson(Fixtures.dir(name).resolve("tokenizer.json"));
        Tokenizer gguf = Tokenizer.fromGguf(Fixtures.ggufMetadata(name));
        List<DynamicTest> decodes = new ArrayList<>();
        for (JsonNode c : Fixtures.read(Fixtures.dir(name).resolve("cases.json")).get("decode_cases")) {
            int[] ids = Fixtures.ids(c.get("ids"));
            String expected = c.get("decoded").textValue();
            decodes.add(dynamicTest(name + " decode " + c.get("ids"), () -> {
                assertThat(json.decode(ids, true)).isEqualTo(expected);
                assertThat(gguf.decode(ids, true)).isEqualTo(expected);
                assertThat(streamed(gguf, ids, true)).isEqualTo(expected);
            }));
        }
        return Stream.of(check(name + " json", json, Fixtures.cases(name, "cases")),
                check(name + " gguf", gguf, Fixtures.cases(name, "gguf_cases")), decodes.stream(),
                preTokenized(name + " json", json, name), preTokenized(name + " gguf", gguf, name)).flatMap(s -> s);
    }

    /** llama3's vocabulary under another pre-tokenizer, from tokenizer.json and from GGUF with another pre name. */
    private Stream<DynamicTest> variant(String name) throws Exception {
        JsonNode root = Fixtures.read(Fixtures.dir(name).resolve("cases.json"));
        Path folder = java.nio.file.Files.createDirectories(temp.resolve(name));
        Tokenizer json = Tokenizer.fromTokenizerJson(Fixtures.llama3With(root.get("pre_tokenizer"), folder));
        Map<String, Object> meta = Fixtures.ggufMetadata("llama3");
        meta.put("tokenizer.ggml.pre", root.get("gguf_pre").textValue());
        meta.put("tokenizer.ggml.add_bos_token", true); // as llama3's template, which the cases were made with
        Tokenizer gguf = Tokenizer.fromGguf(meta);
        return Stream.of(check(name + " json", json, Fixtures.cases(name, "cases")),
                check(name + " gguf", gguf, Fixtures.cases(name, "gguf_cases")),
                preTokenized(name + " json", json, name), preTokenized(name + " gguf", gguf, name)).flatMap(s -> s);
    }

    /**
     * The pieces the pre-tokenizer cuts, against Hugging Face's {@code pre_tokenize_str}: this checks the regex
     * translation (Unicode \\s, case folding) where a small vocabulary would encode both cuts alike.
     */
    private static Stream<DynamicTest> preTokenized(String name, Tokenizer tokenizer, String fixture) {
        JsonNode list = Fixtures.read(Fixtures.dir(fixture).resolve("cases.json")).get("pre_tokenized");
        assertThat(list).isNotEmpty();
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : list) {
            String text = c.get("text").textValue();
            List<String> expected = new ArrayList<>();
            c.get("pieces").forEach(p -> expected.add(p.textValue()));
            tests.add(dynamicTest(name + " pre-tokenize " + Fixtures.JSON.valueToTree(text), () -> {
                List<String> pieces = tokenizer.pipeline().preTokenizer()
                        .apply(List.of(new PreTokenizer.Piece(text, true))).stream()
                        .map(PreTokenizer.Piece::text).filter(t -> !t.isEmpty()).toList();
                assertThat(pieces).isEqualTo(expected);
            }));
        }
        return tests.stream();
    }

    private static Stream<DynamicTest> check(String name, Tokenizer tokenizer, List<Fixtures.Case> cases) {
        assertThat(cases).isNotEmpty();
        return cases.stream().map(c -> dynamicTest(name + " " + c.label(), () -> {
            assertThat(tokenizer.encode(c.text(), c.addSpecial(), c.parseSpecial()))
                    .as("ids of %s", c.label()).containsExactly(c.ids());
            if (c.decoded() != null) {
                assertThat(tokenizer.decode(c.ids(), true)).isEqualTo(c.decoded());
                assertThat(streamed(tokenizer, c.ids(), true)).isEqualTo(c.decoded());
            }
            if (c.decodedSkip() != null) {
                assertThat(tokenizer.decode(c.ids(), false)).isEqualTo(c.decodedSkip());
                assertThat(streamed(tokenizer, c.ids(), false)).isEqualTo(c.decodedSkip());
            }
        }));
    }

    static String streamed(Tokenizer tokenizer, int[] ids, boolean renderSpecial) {
        TokenDecoder decoder = tokenizer.newDecoder(renderSpecial);
        StringBuilder text = new StringBuilder();
        for (int id : ids) text.append(decoder.next(id));
        return text.append(decoder.finish()).toString();
    }
}
