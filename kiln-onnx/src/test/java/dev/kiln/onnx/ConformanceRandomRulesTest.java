package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The property rules of {@link ConformanceRunner#RANDOM_CASES}: they accept every valid draw and reject what no draw gives. */
class ConformanceRandomRulesTest {
    private static Buffer buf(float... v) { return Tensor.of(v, v.length).realize().buffer().toHost(); }

    private static Buffer mask(boolean... v) { return Tensor.of(v, v.length).realize().buffer().toHost(); }

    @Test
    void bernoulliAcceptsZerosAndOnesOnly() {
        List<Tensor> expected = List.of(Tensor.of(new float[3], 3));
        assertThat(ConformanceRunner.judge(ConformanceRunner.RandomCaseRule.BERNOULLI, List.of(), List.of(buf(0, 1, 1)), expected)).isNull();
        assertThat(ConformanceRunner.judge(ConformanceRunner.RandomCaseRule.BERNOULLI, List.of(), List.of(buf(0, 0.5f, 1)), expected))
                .contains("index 1").contains("0.5");
    }

    @Test
    void dropoutNeedsTheScaledInputWhereTheMaskKeepsAndZeroElsewhere() {
        List<Tensor> in = List.of(Tensor.of(new float[] {1, 2, 3}, 3), Tensor.of(new float[] {0.5f}, 1));
        List<Tensor> expected = List.of(Tensor.of(new float[3], 3), Tensor.of(new boolean[3], 3));
        var rule = ConformanceRunner.RandomCaseRule.DROPOUT;
        assertThat(ConformanceRunner.judge(rule, in, List.of(buf(2, 0, 6), mask(true, false, true)), expected)).isNull();
        // kept by the mask but not scaled, dropped by the mask but not zero, and (without a mask) neither 0 nor scaled
        assertThat(ConformanceRunner.judge(rule, in, List.of(buf(1, 0, 6), mask(true, false, true)), expected)).contains("index 0");
        assertThat(ConformanceRunner.judge(rule, in, List.of(buf(2, 4, 6), mask(true, false, true)), expected)).contains("index 1");
        assertThat(ConformanceRunner.judge(rule, in, List.of(buf(2, 0, 5)), List.of(expected.getFirst()))).contains("index 2");
    }
}
