package dev.kiln.llm.model;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Kiln against itself: the two files of one model, a prompt run whole, in chunks or token by token, an f16 KV cache
 * against f32, and the other host devices against CPU.
 */
class ConsistencyTest {
    private static final LlmFixtures.Case HF = LlmFixtures.CASES.get(0), GGUF = LlmFixtures.CASES.get(1);

    private static int[] sequence(LlmFixtures.Case c) {
        return LlmFixtures.ints(LlmFixtures.json(c.path().getParent().resolve("sequence.json")).get("ids"));
    }

    @Test
    void safetensorsAndGgufOfTheSameWeightsGiveTheSameLogits() {
        // the same numbers, but GGUF's Q/K rows are permuted and rotated as interleaved pairs: only the order of the
        // 16 terms of each q.k differs
        int[] ids = sequence(HF);
        float[][] a = LlmFixtures.open(HF).logits(ids), b = LlmFixtures.open(GGUF).logits(ids);
        assertThat(maxDiff(a, b)).isLessThan(ReferenceLogitsTest.ATOL);
    }

    @Test
    void decodingTokenByTokenEqualsOnePrefill() {
        int[] ids = sequence(HF);
        LanguageModel m = LlmFixtures.open(HF);
        float[][] full = m.logits(ids), steps = new float[ids.length][];
        try (Decoder d = m.newDecoder()) {
            for (int t = 0; t < ids.length; t++) steps[t] = d.append(ids[t]);
        }
        assertThat(maxDiff(full, steps)).isLessThan(ReferenceLogitsTest.ATOL);
    }

    @Test
    void aPromptRunInChunksEqualsOneRun() {
        int[] ids = sequence(HF);
        try (LanguageModel chunked = LanguageModel.open(HF.path(), ModelOptions.defaults().withContextLength(64).withPrefillChunk(5))) {
            float[][] whole = LlmFixtures.open(HF).logits(ids), pieces = chunked.logits(ids);
            assertThat(maxDiff(whole, pieces)).isLessThan(ReferenceLogitsTest.ATOL);
            try (Decoder d = chunked.newDecoder()) {
                float[] last = d.append(ids); // 14 tokens in runs of 5, 5 and 4
                assertThat(d.position()).isEqualTo(ids.length);
                assertThat(maxDiff(new float[][] {last}, new float[][] {whole[ids.length - 1]})).isLessThan(ReferenceLogitsTest.ATOL);
            }
        }
    }

    @Test
    void anF16CacheStaysCloseToF32() {
        int[] ids = sequence(HF);
        try (LanguageModel half = LanguageModel.open(HF.path(), ModelOptions.defaults().withContextLength(64).withKvCacheType(DType.F16))) {
            float[][] f32 = LlmFixtures.open(HF).logits(ids), f16 = half.logits(ids);
            // keys and values rounded to f16 (relative 2^-11) move these sharp-attention logits by about 0.06
            assertThat(maxDiff(f32, f16)).isLessThan(0.25).isGreaterThan(0);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CLANG", "INTERP"})
    void theOtherHostDevicesGiveCpusLogits(String device) {
        try {
            dev.kiln.serve.Session.on(device);
        } catch (UnsupportedOperationException e) {
            org.junit.jupiter.api.Assumptions.abort(device + " is unavailable here: " + e.getMessage());
        }
        int[] ids = sequence(HF);
        try (LanguageModel m = LanguageModel.open(HF.path(), ModelOptions.defaults().withContextLength(16).withDevice(device))) {
            assertThat(maxDiff(LlmFixtures.open(HF).logits(ids), m.logits(ids))).isLessThan(ReferenceLogitsTest.ATOL);
            try (Decoder d = m.newDecoder()) {
                d.append(Arrays.copyOf(ids, 8));
                assertThat(d.append(ids[8])).hasSize(384);
            }
        }
    }

    static double maxDiff(float[][] a, float[][] b) {
        assertThat(a.length).isEqualTo(b.length);
        double m = 0;
        for (int r = 0; r < a.length; r++) {
            assertThat(a[r].length).isEqualTo(b[r].length);
            for (int j = 0; j < a[r].length; j++) m = Math.max(m, Math.abs(a[r][j] - b[r][j]));
        }
        return m;
    }
}
