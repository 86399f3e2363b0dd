package dev.kiln.golden;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.onnxspec.MelWeightMatrix;
import dev.kiln.onnxspec.RecurrentLayers;
import dev.kiln.onnxspec.RecurrentOutputs;
import dev.kiln.onnxspec.Resize;
import dev.kiln.onnxspec.TfIdfVectorizer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Golden cases of the ONNX-driven operators (OnnxOps and its companions). */
class OnnxOpsGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "onnxOps"; }

    /** Input 0 as the op sees it: with "pre": "transpose", its last two axes swapped (non-contiguous). */
    private static Tensor x(List<Tensor> in, GoldenArgs a) {
        Tensor x = in.get(0);
        return a.s("pre", "").equals("transpose") ? x.mT() : x;
    }

    /** Input {@code i}, or null when the flag argument {@code key} says it is absent. */
    private static Tensor optional(List<Tensor> in, int i, GoldenArgs a, String key) { return a.b(key) ? in.get(i) : null; }

    private static Integer ignoreIndex(GoldenArgs a) { return a.has("ignore_index") ? a.i("ignore_index") : null; }

    /** A list-of-numbers argument as doubles, or null when absent. */
    private static double[] doubles(GoldenArgs a, String key) {
        if (!a.has(key)) return null;
        var node = a.node().get(key);
        double[] out = new double[node.size()];
        for (int k = 0; k < out.length; k++) out[k] = node.get(k).asDouble();
        return out;
    }

    /** A list-of-strings argument, or null when absent. */
    private static String[] strings(GoldenArgs a, String key) {
        if (!a.has(key)) return null;
        var node = a.node().get(key);
        String[] out = new String[node.size()];
        for (int k = 0; k < out.length; k++) out[k] = node.get(k).asText();
        return out;
    }

    /** The recurrent layer's inputs by name ("x", "w", "r", "b", "lens", "h0", "c0", "p"), absent ones null. */
    private static Map<String, Tensor> named(List<Tensor> in, GoldenArgs a) {
        String[] present = strings(a, "present");
        Map<String, Tensor> m = new java.util.HashMap<>();
        for (int k = 0; k < present.length; k++) m.put(present[k], in.get(k));
        return m;
    }

    private static List<Tensor> outputs(RecurrentOutputs o) {
        return o.yC() == null ? all(o.y(), o.yH()) : all(o.y(), o.yH(), o.yC());
    }

    private static Double clip(GoldenArgs a) { return a.has("clip") ? a.d("clip") : null; }

    private static List<Tensor> all(Tensor... ts) { return new ArrayList<>(List.of(ts)); }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                Map.entry("onnx_gather_elements", GoldenOp.one((in, a) -> x(in, a).gatherElements(a.i("axis"), in.get(1)))),
                Map.entry("onnx_gather_nd", GoldenOp.one((in, a) -> in.get(0).gatherND(in.get(1), a.i("batch_dims")))),
                Map.entry("onnx_scatter_elements", GoldenOp.one((in, a) -> x(in, a).scatterElements(a.i("axis"), in.get(1), in.get(2), a.s("reduction")))),
                Map.entry("onnx_scatter_nd", GoldenOp.one((in, a) -> in.get(0).scatterND(in.get(1), in.get(2), a.s("reduction")))),
                Map.entry("onnx_one_hot", GoldenOp.one((in, a) -> in.get(0).oneHot(a.i("depth"), a.i("axis"), in.get(1)))),
                Map.entry("onnx_hardmax", GoldenOp.one((in, a) -> x(in, a).hardmax(a.i("axis")))),
                Map.entry("onnx_argmax_last", GoldenOp.one((in, a) -> in.get(0).argmax(a.i("axis"), a.b("keepdim"), true))),
                Map.entry("onnx_argmin_last", GoldenOp.one((in, a) -> in.get(0).argmin(a.i("axis"), a.b("keepdim"), true))),
                Map.entry("onnx_cumsum", GoldenOp.one((in, a) -> in.get(0).cumsum(a.i("axis"), a.b("exclusive"), a.b("reverse")))),
                Map.entry("onnx_hard_sigmoid", GoldenOp.one((in, a) -> in.get(0).hardSigmoid(a.d("alpha"), a.d("beta")))),
                Map.entry("onnx_shrink", GoldenOp.one((in, a) -> in.get(0).shrink(a.d("lambd"), a.d("bias")))),
                Map.entry("onnx_thresholded_relu", GoldenOp.one((in, a) -> in.get(0).thresholdedRelu(a.d("alpha")))),
                Map.entry("onnx_isinf", GoldenOp.one((in, a) -> in.get(0).isinf(a.b("detect_positive"), a.b("detect_negative")))),
                Map.entry("onnx_depth_to_space", GoldenOp.one((in, a) -> in.get(0).depthToSpace(a.i("block_size"), a.s("mode")))),
                Map.entry("onnx_space_to_depth", GoldenOp.one((in, a) -> in.get(0).spaceToDepth(a.i("block_size")))),
                Map.entry("onnx_reverse_sequence", GoldenOp.one((in, a) -> in.get(0).reverseSequence(in.get(1), a.i("batch_axis"), a.i("time_axis")))),
                Map.entry("onnx_lrn", GoldenOp.one((in, a) -> in.get(0).lrn(a.i("size"), a.d("alpha"), a.d("beta"), a.d("bias")))),
                Map.entry("onnx_lp_normalization", GoldenOp.one((in, a) -> in.get(0).lpNormalization(a.i("axis"), a.i("p")))),
                Map.entry("onnx_mvn", GoldenOp.one((in, a) -> in.get(0).meanVarianceNormalization(a.ints("axes")))),
                Map.entry("onnx_nll_loss", GoldenOp.one((in, a) -> in.get(0).nllLoss(in.get(1), optional(in, 2, a, "weight"), a.s("reduction"), ignoreIndex(a)))),
                Map.entry("onnx_softmax_cross_entropy_loss", GoldenOp.one((in, a) ->
                        in.get(0).softmaxCrossEntropyLoss(in.get(1), optional(in, 2, a, "weight"), a.s("reduction"), ignoreIndex(a)))),
                Map.entry("onnx_quantize_linear", GoldenOp.one((in, a) -> in.get(0).quantizeLinear(in.get(1), optional(in, 2, a, "zero_point"), a.i("axis")))),
                Map.entry("onnx_dequantize_linear", GoldenOp.one((in, a) -> in.get(0).dequantizeLinear(in.get(1), optional(in, 2, a, "zero_point"), a.i("axis")))),
                Map.entry("onnx_dynamic_quantize_linear", (in, a) -> {
                    Tensor.Quantized q = in.get(0).dynamicQuantizeLinear();
                    return all(q.values(), q.scale(), q.zeroPoint());
                }),
                Map.entry("onnx_det", GoldenOp.one((in, a) -> x(in, a).det())),
                Map.entry("onnx_max_unpool", GoldenOp.one((in, a) -> in.get(0).maxUnpool(in.get(1), a.ints("output_shape")))),
                Map.entry("onnx_eye_like", GoldenOp.one((in, a) -> in.get(0).eyeLike(a.i("k"), a.has("dtype") ? DType.parse(a.s("dtype")) : null))),
                Map.entry("onnx_range", GoldenOp.one((in, a) -> Tensor.range(a.number("start"), a.number("limit"), a.number("delta"), DType.parse(a.s("dtype"))))),
                Map.entry("onnx_hann_window", GoldenOp.one((in, a) -> Tensor.hannWindow(a.i("size"), a.b("periodic"), DType.parse(a.s("dtype"))))),
                Map.entry("onnx_hamming_window", GoldenOp.one((in, a) -> Tensor.hammingWindow(a.i("size"), a.b("periodic"), DType.parse(a.s("dtype"))))),
                Map.entry("onnx_resize", GoldenOp.one((in, a) -> Resize.apply(in.get(0), a.ints("sizes"), doubles(a, "scales"), doubles(a, "roi"), a.s("mode"),
                        a.s("transform"), a.s("nearest_mode"), a.d("cubic_coeff_a"), a.b("exclude_outside"), a.d("extrapolation_value")))),
                Map.entry("onnx_grid_sample", GoldenOp.one((in, a) -> in.get(0).gridSample(in.get(1), a.s("mode"), a.s("padding_mode"), a.b("align_corners")))),
                Map.entry("onnx_rnn", (in, a) -> {
                    Map<String, Tensor> t = named(in, a);
                    return outputs(RecurrentLayers.rnn(t.get("x"), t.get("w"), t.get("r"), t.get("b"), t.get("lens"), t.get("h0"), a.s("direction", "forward"),
                            strings(a, "activations"), doubles(a, "alpha"), doubles(a, "beta"), clip(a), a.i("layout", 0)));
                }),
                Map.entry("onnx_gru", (in, a) -> {
                    Map<String, Tensor> t = named(in, a);
                    return outputs(RecurrentLayers.gru(t.get("x"), t.get("w"), t.get("r"), t.get("b"), t.get("lens"), t.get("h0"), a.s("direction", "forward"),
                            strings(a, "activations"), doubles(a, "alpha"), doubles(a, "beta"), clip(a), a.b("linear_before_reset", false), a.i("layout", 0)));
                }),
                Map.entry("onnx_lstm", (in, a) -> {
                    Map<String, Tensor> t = named(in, a);
                    return outputs(RecurrentLayers.lstm(t.get("x"), t.get("w"), t.get("r"), t.get("b"), t.get("lens"), t.get("h0"), t.get("c0"), t.get("p"),
                            a.s("direction", "forward"), strings(a, "activations"), doubles(a, "alpha"), doubles(a, "beta"), clip(a),
                            a.b("input_forget", false), a.i("layout", 0)));
                }),
                Map.entry("onnx_dft", GoldenOp.one((in, a) -> in.get(0).dft(a.i("axis"), a.b("inverse"), a.b("onesided"),
                        a.has("dft_length") ? a.i("dft_length") : null))),
                Map.entry("onnx_stft", GoldenOp.one((in, a) -> in.get(0).stft(a.i("frame_step"), optional(in, 1, a, "window"),
                        a.has("frame_length") ? a.i("frame_length") : null, a.b("onesided")))),
                Map.entry("onnx_mel_weight_matrix", GoldenOp.one((in, a) -> MelWeightMatrix.of(a.i("num_mel_bins"), a.i("dft_length"),
                        a.i("sample_rate"), a.d("lower_edge_hertz"), a.d("upper_edge_hertz"), DType.parse(a.s("dtype"))))),
                Map.entry("onnx_max_pool", GoldenOp.one((in, a) -> in.get(0).maxPool(a.ints("kernel"), a.ints("strides", null), a.ints("pads", null),
                        a.ints("dilations", null), a.b("ceil_mode")))),
                Map.entry("onnx_max_pool_with_indices", (in, a) -> {
                    Tensor.Pooled p = in.get(0).maxPoolWithIndices(a.ints("kernel"), a.ints("strides", null), a.ints("pads", null),
                            a.ints("dilations", null), a.b("ceil_mode"), a.i("storage_order"));
                    return all(p.values(), p.indices());
                }),
                Map.entry("onnx_avg_pool", GoldenOp.one((in, a) -> in.get(0).avgPool(a.ints("kernel"), a.ints("strides", null), a.ints("pads", null),
                        a.ints("dilations", null), a.b("ceil_mode"), a.b("count_include_pad")))),
                Map.entry("onnx_lp_pool", GoldenOp.one((in, a) -> in.get(0).lpPool(a.d("p"), a.ints("kernel"), a.ints("strides", null), a.ints("pads", null),
                        a.ints("dilations", null), a.b("ceil_mode")))),
                Map.entry("onnx_roi_align", GoldenOp.one((in, a) -> in.get(0).roiAlign(in.get(1), in.get(2), a.s("mode"), a.i("output_height"),
                        a.i("output_width"), a.i("sampling_ratio"), a.d("spatial_scale"), a.s("transform")))),
                Map.entry("onnx_tfidf_vectorizer", GoldenOp.one((in, a) -> TfIdfVectorizer.apply(in.get(0), a.i("min_gram"), a.i("max_gram"), a.i("max_skip"),
                        a.s("mode"), java.util.Arrays.stream(a.ints("pool")).asLongStream().toArray(), a.ints("ngram_counts"), a.ints("ngram_indexes"),
                        doubles(a, "weights")))),
                Map.entry("onnx_blackman_window", GoldenOp.one((in, a) -> Tensor.blackmanWindow(a.i("size"), a.b("periodic"), DType.parse(a.s("dtype"))))));
    }
}
