package dev.kiln.llm.model;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.Decoder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Batched decode against the single-sequence model: sequences of different lengths in slots of one batch, stepped
 * together, give each position's logits of the whole sequence run alone; a slot left out of some steps (the rows of
 * the others then packed before it) and a free slot do not disturb the others.
 */
class BatchedDecodeTest {
    private static int[] sequence(LlmFixtures.Case c) {
        return LlmFixtures.ints(LlmFixtures.json(c.path().getParent().resolve("sequence.json")).get("ids"));
    }

    /** f32 safetensors, and Q8_0 GGUF: four rows take the quantised products' many-rows path, one row the dot products. */
    @ParameterizedTest
    @ValueSource(ints = {0, 2})
    void slotsSteppedTogetherGiveEachSequencesOwnLogits(int fixture) {
        LlmFixtures.Case c = LlmFixtures.CASES.get(fixture);
        LanguageModel m = LlmFixtures.open(c);
        int[] ids = sequence(c);
        float[][] whole = m.logits(ids);
        int[] prompt = {3, 7, 5}; // slot s's prompt: the first prompt[s] ids; slot 3 stays free
        try (BatchedDecode batch = m.compiled().newBatchedDecode(4)) {
            int[] at = new int[4];
            for (int s = 0; s < 3; s++) {
                try (Decoder d = m.newDecoder()) {
                    float[] last = d.append(Arrays.copyOf(ids, prompt[s]));
                    assertThat(ConsistencyTest.maxDiff(new float[][] {last}, new float[][] {whole[prompt[s] - 1]})).isLessThan(ReferenceLogitsTest.ATOL);
                    batch.admit(s, d);
                }
                at[s] = prompt[s];
                assertThat(batch.position(s)).isEqualTo(prompt[s]);
            }
            assertThat(batch.position(3)).isEqualTo(-1);
            for (int step = 0; step < 6; step++) {
                int[] tokens = new int[4];
                boolean[] active = new boolean[4];
                for (int s = 0; s < 3; s++) {
                    // slot 1 sits out steps 2 and 3, slot 0 step 3: slot 2 takes row 1, then row 0 alone (the dot products)
                    active[s] = !(s == 1 && (step == 2 || step == 3)) && !(s == 0 && step == 3);
                    if (active[s]) tokens[s] = ids[at[s]];
                }
                float[][] logits = batch.step(tokens, active);
                assertThat(logits[3]).isNull();
                for (int s = 0; s < 3; s++) {
                    if (!active[s]) {
                        assertThat(logits[s]).isNull();
                        continue;
                    }
                    assertThat(ConsistencyTest.maxDiff(new float[][] {logits[s]}, new float[][] {whole[at[s]]}))
                            .as("slot %d at position %d, step %d", s, at[s], step).isLessThan(ReferenceLogitsTest.ATOL);
                    at[s]++;
                    assertThat(batch.position(s)).isEqualTo(at[s]);
                }
            }
            batch.release(0);
            assertThat(batch.position(0)).isEqualTo(-1);
        }
    }

    @Test
    void refusesFreeSlotsBadTokensAndFullSequences() {
        LlmFixtures.Case c = LlmFixtures.CASES.get(0);
        LanguageModel m = LlmFixtures.open(c);
        int vocab = m.compiled().spec().vocab(), context = m.contextLength();
        try (BatchedDecode batch = m.compiled().newBatchedDecode(2)) {
            assertThatThrownBy(() -> batch.step(new int[] {1, 1}, new boolean[] {true, false}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("slot 0 holds no sequence");
            assertThatThrownBy(() -> batch.step(new int[] {1}, new boolean[] {true})).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("2 tokens and flags expected");
            try (Decoder d = m.newDecoder()) {
                assertThatThrownBy(() -> batch.admit(0, d)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds no tokens");
                d.append(new int[context - 1]);
                batch.admit(1, d);
            }
            assertThatThrownBy(() -> batch.step(new int[] {0, vocab}, new boolean[] {false, true}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside the vocabulary");
            try (Decoder other = m.newDecoder()) {
                other.append(1);
                assertThatThrownBy(() -> batch.admit(2, other)).isInstanceOf(IndexOutOfBoundsException.class);
            }
            batch.step(new int[] {0, 1}, new boolean[] {false, true}); // the last position
            assertThat(batch.position(1)).isEqualTo(context);
            assertThatThrownBy(() -> batch.step(new int[] {0, 1}, new boolean[] {false, true})).isInstanceOf(ContextOverflowException.class);
        }
    }
}
