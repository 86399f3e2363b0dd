package dev.kiln.llm.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

import static dev.kiln.llm.model.LlmFixtures.CASES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Kiln's Llama-family graph against transformers (tools/golden/gen_llm_models.py), for every model file: Llama 3
 * with RoPE scaling, Mistral with a sliding window, Qwen2 with QKV biases; safetensors folders and GGUF files in F32,
 * F16, Q8_0 and Q4_0. A quantised file's reference ran transformers on the file's weights dequantised by gguf.quants, so
 * every comparison is of two f32 computations on the same numbers.
 *
 * <p>Tolerance: {@value #ATOL} + {@value #RTOL} times the reference logit, on logits of magnitude up to about 17. The
 * generator's weights make attention sharp (so that positions matter and greedy choices are varied), which makes the
 * logits sensitive to rounding: transformers' own float32 logits differ from its float64 ones by up to 1.8e-4 on these
 * models (the generator prints it), and Kiln, summing in other orders, differs from transformers by up to 1.2e-4. A
 * wrong rotary layout, a missed bias, window, scaling factor or cache row changes logits by 0.01 to 10.
 */
class ReferenceLogitsTest {
    static final double ATOL = 3e-4, RTOL = 2e-5;

    @ParameterizedTest
    @FieldSource("dev.kiln.llm.model.LlmFixtures#CASES")
    void prefillLogitsMatchTransformers(LlmFixtures.Case c) {
        int[] ids = LlmFixtures.ints(LlmFixtures.json(c.path().getParent().resolve("sequence.json")).get("ids"));
        float[][] want = LlmFixtures.rows(c.refDir().resolve("prefill.npy"));
        float[][] got = LlmFixtures.open(c).logits(ids);
        assertClose(c + " prefill", got, want);
    }

    @ParameterizedTest
    @FieldSource("dev.kiln.llm.model.LlmFixtures#CASES")
    void decodeStepsMatchTransformersWithItsKvCache(LlmFixtures.Case c) {
        JsonNode seq = LlmFixtures.json(c.path().getParent().resolve("sequence.json"));
        int[] ids = LlmFixtures.ints(seq.get("ids"));
        int prefix = seq.get("prefix").intValue();
        float[][] want = LlmFixtures.rows(c.refDir().resolve("decode.npy"));
        float[][] got = new float[ids.length - prefix][];
        try (Decoder d = LlmFixtures.open(c).newDecoder()) {
            d.append(java.util.Arrays.copyOf(ids, prefix));
            for (int t = prefix; t < ids.length; t++) got[t - prefix] = d.append(ids[t]);
            assertThat(d.position()).isEqualTo(ids.length);
        }
        assertClose(c + " decode", got, want);
    }

    @ParameterizedTest
    @FieldSource("dev.kiln.llm.model.LlmFixtures#CASES")
    void greedyContinuationEqualsTransformersGenerate(LlmFixtures.Case c) {
        JsonNode g = LlmFixtures.json(c.refDir().resolve("greedy.json"));
        LanguageModel model = LlmFixtures.open(c);
        int[] prompt = LlmFixtures.ints(g.get("prompt_ids"));
        assertThat(model.encode(g.get("prompt").textValue())).as("the prompt's tokens").containsExactly(prompt);
        int[] want = LlmFixtures.ints(g.get("continuation"));
        GenerationResult r = model.generate(g.get("prompt").textValue(), GenerationOptions.greedy().withMaxTokens(want.length).withIgnoreEos(true));
        assertThat(r.tokens()).as(c + " greedy continuation").containsExactly(want);
        // the text a continuation adds to its prompt's (as transformers' text-generation pipeline slices it): a
        // SentencePiece word's leading space stays, since the continuation does not begin the text
        int[] all = java.util.stream.IntStream.concat(java.util.Arrays.stream(prompt), java.util.Arrays.stream(want)).toArray();
        String promptText = model.tokenizer().decode(prompt, false), fullText = model.tokenizer().decode(all, false);
        assertThat(fullText).startsWith(promptText);
        assertThat(r.text()).isEqualTo(fullText.substring(promptText.length()));
    }

    /**
     * The quantised files on the CLANG device, whose decode products are native code ({@link
     * dev.kiln.llm.gguf.NativeBlockProducts}): the decode steps' logits within the same tolerance, the greedy continuation
     * the same tokens.
     */
    @ParameterizedTest
    @FieldSource("dev.kiln.llm.model.LlmFixtures#QUANTISED")
    void quantisedFilesOnClangMatchTransformers(LlmFixtures.Case c) {
        var reason = dev.kiln.runtime.DeviceRegistry.providers().get("CLANG").unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        JsonNode seq = LlmFixtures.json(c.path().getParent().resolve("sequence.json"));
        int[] ids = LlmFixtures.ints(seq.get("ids"));
        int prefix = seq.get("prefix").intValue();
        float[][] want = LlmFixtures.rows(c.refDir().resolve("decode.npy"));
        float[][] got = new float[ids.length - prefix][];
        try (LanguageModel model = LanguageModel.open(c.path(), ModelOptions.defaults().withContextLength(64).withDevice("CLANG"))) {
            try (Decoder d = model.newDecoder()) {
                d.append(java.util.Arrays.copyOf(ids, prefix));
                for (int t = prefix; t < ids.length; t++) got[t - prefix] = d.append(ids[t]);
            }
            assertClose(c + " decode on CLANG", got, want);
            JsonNode g = LlmFixtures.json(c.refDir().resolve("greedy.json"));
            int[] continuation = LlmFixtures.ints(g.get("continuation"));
            GenerationResult r = model.generate(g.get("prompt").textValue(), GenerationOptions.greedy().withMaxTokens(continuation.length).withIgnoreEos(true));
            assertThat(r.tokens()).as(c + " greedy continuation on CLANG").containsExactly(continuation);
        }
    }

    static void assertClose(String what, float[][] got, float[][] want) {
        assertThat(got.length).as(what + " rows").isEqualTo(want.length);
        for (int r = 0; r < want.length; r++) {
            assertThat(got[r].length).as(what + " row " + r).isEqualTo(want[r].length);
            for (int j = 0; j < want[r].length; j++) {
                double err = Math.abs(got[r][j] - want[r][j]), bound = ATOL + RTOL * Math.abs(want[r][j]);
                if (!(err <= bound)) fail("%s: row %d logit %d is %s, expected %s (difference %.3g over the bound %.3g)", what, r, j, got[r][j], want[r][j], err, bound);
            }
        }
    }
}
