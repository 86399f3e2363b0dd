package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

/**
 * Single pre-tokenizer steps as a tokenizer.json writes them (every Split behaviour with and without invert, Digits,
 * every Metaspace scheme), against Hugging Face's {@code pre_tokenize_str} on short texts.
 */
class PreTokenizerStepsTest {
    @TestFactory
    Stream<DynamicTest> stepsCutLikeHuggingFace() {
        HfComponents components = new HfComponents(new JsonFields(Path.of("splits.json")));
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : Fixtures.read(Fixtures.dir("splits").resolve("cases.json")).get("cases")) {
            String text = c.get("text").textValue();
            List<String> expected = new ArrayList<>();
            c.get("pieces").forEach(p -> expected.add(p.textValue()));
            JsonNode step = c.get("pre_tokenizer");
            tests.add(dynamicTest(step + " " + Fixtures.JSON.valueToTree(text), () -> {
                PreTokenizer pre = components.preTokenizer(step, "pre_tokenizer");
                List<String> pieces = pre.apply(List.of(new PreTokenizer.Piece(text, true))).stream()
                        .map(PreTokenizer.Piece::text).toList();
                assertThat(pieces).isEqualTo(expected);
            }));
        }
        assertThat(tests).hasSizeGreaterThan(300);
        return tests.stream();
    }
}
