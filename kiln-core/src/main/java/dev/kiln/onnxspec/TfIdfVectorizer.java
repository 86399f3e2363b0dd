package dev.kiln.onnxspec;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.Arrays;

/** ONNX TfIdfVectorizer: n-gram (with skips) counts of integer sequences, weighted as TF, IDF or TF-IDF. */
public final class TfIdfVectorizer {
    private TfIdfVectorizer() {}

    /**
     * ONNX TfIdfVectorizer of the integer tensor {@code x} of sequences, (C) or (N, C), giving f32 (outSize) or
     * (N, outSize) with {@code outSize = max(ngramIndexes) + 1}. The pool holds n-grams grouped by length:
     * those of length n start at {@code pool[ngramCounts[n-1]]}; pool n-gram k is counted, for each
     * length from {@code minGramLength} to {@code maxGramLength}, at every start with its items spaced
     * {@code skip + 1} apart for each skip from 0 to {@code maxSkipCount} (unigrams once). {@code mode}
     * {@code "TF"} writes the count to position {@code ngramIndexes[k]}, {@code "IDF"} the weight where the
     * count is positive, {@code "TFIDF"} count times weight; {@code weights} may be null (all 1).
     */
    public static Tensor apply(Tensor x, int minGramLength, int maxGramLength, int maxSkipCount, String mode, long[] pool, int[] ngramCounts,
                                  int[] ngramIndexes, double[] weights) {
        return tfIdfVectorizer(x, minGramLength, maxGramLength, maxSkipCount, mode, pool, ngramCounts, ngramIndexes, weights);
    }

    private static Tensor tfIdfVectorizer(Tensor x, int minGram, int maxGram, int maxSkip, String mode, long[] pool, int[] ngramCounts, int[] ngramIndexes,
                                  double[] weights) {
        String op = "tfIdfVectorizer";
        if (!x.dtype().isInt() || (x.ndim() != 1 && x.ndim() != 2)) {
            throw new IllegalArgumentException(op + ": input must be 1-D or 2-D integers, got " + x.dtype() + x.shape());
        }
        if (!"TF".equals(mode) && !"IDF".equals(mode) && !"TFIDF".equals(mode)) {
            throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid are 'TF', 'IDF', 'TFIDF'");
        }
        if (minGram < 1 || maxGram < minGram || maxSkip < 0 || ngramCounts.length < maxGram) {
            throw new IllegalArgumentException(op + ": gram lengths " + minGram + ".." + maxGram + " (max skip " + maxSkip + ") need 1 <= min <= max <= "
                    + ngramCounts.length + " pool levels");
        }
        // pool entries of level n (length n) start at ngramCounts[n - 1]; each level runs to the next start
        int entries = 0;
        int[] levelEnd = new int[ngramCounts.length];
        for (int n = 1; n <= ngramCounts.length; n++) {
            levelEnd[n - 1] = n < ngramCounts.length ? ngramCounts[n] : pool.length;
            int items = levelEnd[n - 1] - ngramCounts[n - 1];
            if (items < 0 || items % n != 0) {
                throw new IllegalArgumentException(op + ": pool level " + n + " holds " + items + " items, not a multiple of " + n + " (ngram_counts "
                        + Arrays.toString(ngramCounts) + ", pool size " + pool.length + ")");
            }
            entries += items / n;
        }
        if (ngramIndexes.length != entries || (weights != null && weights.length != entries)) {
            throw new IllegalArgumentException(op + ": " + entries + " pool n-grams need as many ngram_indexes (got " + ngramIndexes.length + ") and weights (got "
                    + (weights == null ? "none" : weights.length) + ")");
        }
        int outSize = Arrays.stream(ngramIndexes).max().orElse(-1) + 1;
        boolean batched = x.ndim() == 2;
        Tensor rows = (batched ? x : x.unsqueeze(0)).cast(DType.I64);
        int nRows = rows.dim(0), c = rows.dim(1);
        Tensor total = Tensor.zeros(DType.F32, nRows, outSize).to(x.device());
        int first = 0;
        for (int n = 1; n <= ngramCounts.length; n++) {
            int k = (levelEnd[n - 1] - ngramCounts[n - 1]) / n, base = first;
            first += k;
            if (n < minGram || n > maxGram || k == 0) continue;
            long[][] cols = new long[n][k];
            for (int e = 0; e < k; e++) for (int j = 0; j < n; j++) cols[j][e] = pool[ngramCounts[n - 1] + e * n + j];
            Tensor counts = null; // (rows, k)
            for (int skip = 0; skip <= (n == 1 ? 0 : maxSkip); skip++) {
                int len = c - (n - 1) * (skip + 1);
                if (len <= 0) continue;
                Tensor match = null; // (rows, len, k)
                for (int j = 0; j < n; j++) {
                    int at = j * (skip + 1);
                    Tensor m = rows.slice(1, at, at + len, 1).unsqueeze(-1).eq(Tensor.of(cols[j], k).to(x.device()));
                    match = match == null ? m : match.logicalAnd(m);
                }
                Tensor cnt = match.sum(new int[] {1}, false);
                counts = counts == null ? cnt : counts.add(cnt);
            }
            if (counts == null) continue;
            double[] place = new double[k * outSize];
            for (int e = 0; e < k; e++) place[e * outSize + ngramIndexes[base + e]] = 1;
            Tensor value = counts.cast(DType.F32);
            if (!mode.equals("TF")) {
                double[] w = new double[k];
                for (int e = 0; e < k; e++) w[e] = weights == null ? 1 : weights[base + e];
                Tensor wt = Tensor.of(DType.F32, w, k).to(x.device());
                value = mode.equals("IDF") ? Tensor.where(counts.gt(0L), wt, 0.0) : value.mul(wt);
            }
            total = total.add(value.matmul(Tensor.of(DType.F32, place, k, outSize).to(x.device())));
        }
        return batched ? total : total.reshape(outSize);
    }
}
