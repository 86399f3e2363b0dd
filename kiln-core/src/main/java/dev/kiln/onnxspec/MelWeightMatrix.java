package dev.kiln.onnxspec;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

/** ONNX MelWeightMatrix: triangular mel filters over the bins of a one-sided spectrum, computed on the host as ONNX's reference does. */
public final class MelWeightMatrix {
    private MelWeightMatrix() {}

    /**
     * ONNX MelWeightMatrix: the (dftLength/2 + 1, numMelBins) matrix of triangular mel filters between
     * {@code lowerEdgeHertz} and {@code upperEdgeHertz}, in {@code dtype} (ONNX default f32), computed on
     * the host as ONNX's reference does.
     */
    public static Tensor of(int numMelBins, int dftLength, int sampleRate, double lowerEdgeHertz, double upperEdgeHertz, DType dtype) {
        return melWeightMatrix(numMelBins, dftLength, sampleRate, lowerEdgeHertz, upperEdgeHertz, dtype);
    }

    private static Tensor melWeightMatrix(int numMelBins, int dftLength, int sampleRate, double lowerEdgeHertz, double upperEdgeHertz, DType dtype) {
        String op = "melWeightMatrix";
        if (numMelBins <= 0 || dftLength <= 0 || sampleRate <= 0) {
            throw new IllegalArgumentException(op + ": numMelBins " + numMelBins + ", dftLength " + dftLength + " and sampleRate " + sampleRate + " must be > 0");
        }
        if (!(lowerEdgeHertz >= 0 && lowerEdgeHertz < upperEdgeHertz && upperEdgeHertz <= sampleRate / 2.0)) {
            throw new IllegalArgumentException(op + ": edges " + lowerEdgeHertz + " Hz and " + upperEdgeHertz + " Hz must satisfy 0 <= lower < upper <= sampleRate / 2 = "
                    + sampleRate / 2.0);
        }
        if (dtype.isBool() || dtype.isPacked()) throw new IllegalArgumentException(op + ": dtype must be numeric, got " + dtype);
        int bins = dftLength / 2 + 1;
        double lowMel = 2595 * Math.log10(1 + lowerEdgeHertz / 700), highMel = 2595 * Math.log10(1 + upperEdgeHertz / 700);
        double step = (highMel - lowMel) / (numMelBins + 2);
        int[] points = new int[numMelBins + 2];
        for (int i = 0; i < points.length; i++) {
            double hz = 700 * (Math.pow(10, (i * step + lowMel) / 2595) - 1);
            points[i] = (int) pythonFloorDiv((dftLength + 1) * hz, sampleRate);
        }
        double[] w = new double[bins * numMelBins];
        for (int i = 0; i < numMelBins; i++) {
            int lo = points[i], ce = points[i + 1], hi = points[i + 2];
            if (ce == lo) set(w, bins, numMelBins, ce, i, 1);
            else for (int j = lo; j <= ce; j++) set(w, bins, numMelBins, j, i, (double) (j - lo) / (ce - lo));
            for (int j = ce; j < hi; j++) set(w, bins, numMelBins, j, i, (double) (hi - j) / (hi - ce));
        }
        return Tensor.of(dtype, w, bins, numMelBins);
    }

    private static void set(double[] w, int rows, int cols, int row, int col, double v) {
        if (row < 0 || row >= rows) {
            throw new IllegalArgumentException("melWeightMatrix: filter " + col + " reaches spectrogram bin " + row + " outside [0, " + rows + ")");
        }
        w[row * cols + col] = v;
    }

    /** Python's float floor division, which the reference uses (it corrects the rounding of {@code a / b}). */
    private static double pythonFloorDiv(double a, double b) {
        double mod = a % b, div = (a - mod) / b;
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
        double fl = Math.floor(div);
        return div - fl > 0.5 ? fl + 1 : fl;
    }
}
