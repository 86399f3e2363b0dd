package dev.kiln;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad arguments of convolution and pooling name the op, the shapes and the offending value. */
class ConvolutionErrorsTest {
    private static final Tensor X = Tensor.zeros(1, 3, 8, 8);

    @Test
    void convRejectsWrongRanks() {
        assertThatThrownBy(() -> Tensor.zeros(3, 8, 8).conv2d(Tensor.zeros(4, 3, 3, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: input must be 4-D (N, C, H, W), got [3, 8, 8]");
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 3, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: weight must be 4-D (Cout, Cin/groups, kH, kW), got [4, 3, 3]");
        assertThatThrownBy(() -> Tensor.zeros(1, 3, 8).conv1d(Tensor.zeros(2, 3, 2, 2), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv1d: weight must be 3-D");
        assertThatThrownBy(() -> X.conv3d(Tensor.zeros(2, 3, 2, 2, 2), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv3d: input must be 5-D (N, C, D, H, W), got [1, 3, 8, 8]");
        assertThatThrownBy(() -> X.conv(Tensor.zeros(4, 3), null, null, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv: weight must have at least 3 axes").hasMessageContaining("[4, 3]");
        assertThatThrownBy(() -> X.conv(Tensor.zeros(4, 3, 2), null, null, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv: input must be 3-D (N, C, L), got [1, 3, 8, 8]");
    }

    @Test
    void convRejectsChannelAndGroupMismatches() {
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 2, 3, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: input [1, 3, 8, 8] has 3 channels, weight [4, 2, 3, 3] expects 2 (groups 1)");
        assertThatThrownBy(() -> Tensor.zeros(1, 4, 8, 8).conv2d(Tensor.zeros(4, 1, 3, 3), null, null, null, null, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("has 4 channels, weight [4, 1, 3, 3] expects 2 (groups 2)");
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 1, 3, 3), null, null, null, null, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: groups 2 does not divide the 3 channels of input [1, 3, 8, 8]");
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 1, 3, 3), null, null, null, null, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: groups 3 does not divide the 4 output channels of weight [4, 1, 3, 3]");
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 3, 3, 3), null, null, null, null, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: groups must be positive, got 0");
        assertThatThrownBy(() -> X.conv2d(Tensor.zeros(4, 3, 3, 3), Tensor.zeros(3)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: bias must have shape [4]").hasMessageContaining("got [3]");
    }

    @Test
    void convRejectsBadGeometry() {
        Tensor w = Tensor.zeros(4, 3, 3, 3);
        assertThatThrownBy(() -> X.conv2d(w, null, new int[] {0, 1}, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: stride must be positive, got [0, 1]");
        assertThatThrownBy(() -> X.conv2d(w, null, null, null, new int[] {-1}, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: dilation must be positive, got [-1, -1]");
        assertThatThrownBy(() -> X.conv2d(w, null, null, new int[] {1, -1}, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: padding must not be negative, got [1, -1]");
        assertThatThrownBy(() -> X.conv2d(w, null, new int[] {1, 1, 1}, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: stride [1, 1, 1] has 3 values, expected 1 or 2");
        assertThatThrownBy(() -> Tensor.zeros(1, 3, 4, 8).conv2d(Tensor.zeros(4, 3, 5, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: kernel [5, 3] (dilation [1, 1]) is larger than input [1, 3, 4, 8] padded by [0, 0]");
        assertThatThrownBy(() -> X.conv2d(w, null, null, new int[] {0}, new int[] {4}, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("conv2d: kernel [3, 3] (dilation [4, 4]) is larger than input");
    }

    @Test
    void convTransposeRejectsBadArguments() {
        Tensor x = Tensor.zeros(1, 4, 5, 5);
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(3, 2, 3, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: input [1, 4, 5, 5] has 4 channels, weight [3, 2, 3, 3] expects 3");
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(4, 2, 3, 3), null, null, null, null, null, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: groups 3 does not divide the 4 channels of input [1, 4, 5, 5]");
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(4, 2, 3, 3), Tensor.zeros(2), null, null, null, null, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: bias must have shape [4]");
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(4, 2, 3, 3), null, new int[] {2}, null, new int[] {2}, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: outputPadding [2, 2] must be smaller than stride [2, 2] or dilation [1, 1]");
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(4, 2, 1, 1), null, null, new int[] {3}, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: input [1, 4, 5, 5] with weight [4, 2, 1, 1]").hasMessageContaining("gives output size -1");
        assertThatThrownBy(() -> Tensor.zeros(4, 5, 5).convTranspose2d(Tensor.zeros(4, 2, 3, 3), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: input must be 4-D (N, C, H, W), got [4, 5, 5]");
        assertThatThrownBy(() -> x.convTranspose2d(Tensor.zeros(4, 2, 3, 3), null, new int[] {0}, null, null, null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("convTranspose2d: stride must be positive, got [0, 0]");
    }

    @Test
    void poolingRejectsBadArguments() {
        assertThatThrownBy(() -> Tensor.zeros(8, 8).maxPool2d(2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool2d: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got [8, 8]");
        assertThatThrownBy(() -> X.maxPool2d(new int[] {3, 3}, null, new int[] {2, 0}, null, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool2d: padding [2, 0] must be at most half the kernel [3, 3]");
        assertThatThrownBy(() -> X.avgPool2d(new int[] {2}, new int[] {0}, null, false, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("avgPool2d: stride must be positive, got [0, 0]");
        assertThatThrownBy(() -> X.avgPool2d(0, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("avgPool2d: kernel must be positive, got [0, 2]");
        assertThatThrownBy(() -> X.maxPool2d(new int[] {3}, null, null, new int[] {4}, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool2d: kernel [3, 3] (dilation [4, 4]) does not fit input [1, 3, 8, 8] padded by [0, 0]");
        assertThatThrownBy(() -> Tensor.zeros(1, 2, 4).avgPool1d(5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("avgPool1d: kernel [5] (dilation [1]) does not fit input [1, 2, 4]");
        assertThatThrownBy(() -> Tensor.zeros(8, 8, 8).maxPool3d(2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool3d: input must be 4-D (C, D, H, W) or 5-D (N, C, D, H, W), got [8, 8, 8]");
        assertThatThrownBy(() -> X.maxPool2d(null, null, null, null, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool2d: kernel size is required");
        assertThatThrownBy(() -> X.maxPool2d(2, 2, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPool2d: kernel [2, 2, 2] has 3 values, expected 1 or 2");
        assertThatThrownBy(() -> X.lpPool2d(0, new int[] {2}, null, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lpPool2d: p must be positive and finite, got 0.0");
        assertThatThrownBy(() -> Tensor.zeros(3, 8).globalAvgPool())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("globalAvgPool: input must be at least 3-D (N, C, spatial...), got [3, 8]");
        assertThatThrownBy(() -> Tensor.zeros(3).globalMaxPool())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("globalMaxPool: input must be at least 3-D");
    }
}
