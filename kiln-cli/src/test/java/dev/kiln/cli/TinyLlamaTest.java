package dev.kiln.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.SamplingOptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.stream.StreamSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's tiny trained Llama: Kiln tokenises the prompt as SentencePiece did and continues it greedily with the
 * tokens transformers chose running the same Q8_0 weights dequantised (tools/golden/train_tiny_llama.py), and the text
 * reads as English.
 */
class TinyLlamaTest {
    @Test
    void greedyContinuationEqualsTransformersOnTheSameWeights() throws IOException {
        JsonNode ref;
        try (InputStream in = TinyLlamaTest.class.getResourceAsStream("/tiny-trained/greedy.json")) {
            ref = new ObjectMapper().readTree(in);
        }
        int[] promptIds = ints(ref.get("prompt_ids")), expected = ints(ref.get("continuation"));
        try (LanguageModel lm = TinyLlama.open()) {
            assertThat(lm.encode(ref.get("prompt").asText())).containsExactly(promptIds);
            GenerationResult r = lm.generate(ref.get("prompt").asText(),
                    new GenerationOptions(expected.length, List.of(), true, SamplingOptions.greedy()));
            assertThat(r.tokens()).as("greedy continuation (smallest top-2 margin %s)", ref.get("min_margin")).containsExactly(expected);
            assertThat(r.text()).matches("(?s)[ -~\\n\\t]+").containsPattern("\\b(the|of|a|is|to)\\b")
                    .as("the continuation's first word keeps its space").startsWith(" ");
        }
    }

    private static int[] ints(JsonNode array) {
        return StreamSupport.stream(array.spliterator(), false).mapToInt(JsonNode::asInt).toArray();
    }
}
