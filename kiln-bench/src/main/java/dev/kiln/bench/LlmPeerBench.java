package dev.kiln.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.gguf.GgufFile;
import dev.kiln.llm.gguf.GgufTensor;
import dev.kiln.runtime.MachinePeak;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * A GGUF language model on Kiln and on llama.cpp in one run, one after the other: prefill and decode tokens/s (medians),
 * the decode bound of the machine (weight bytes read per token over the streaming bandwidth measured in this run), and
 * whether the two greedy continuations agree. The LLM rows of BENCHMARKS.md come from this command:
 *
 * <pre>kiln-bench/bench.sh --main LlmPeerBench MODEL.gguf [--prompt 16] [--gen 64] [--runs 3] [--context 512] [--peer node|none] [--device CPU|CLANG] [--q8-activations true] [--kv f16]</pre>
 *
 * Prompt: token ids 300, 301, ... (the same for both). Greedy decoding (argmax), so both must produce the same ids.
 * The peer is {@code tools/bench/llamacpp/bench.mjs} (node-llama-cpp 3.21.1's prebuilt CPU build, 2 threads; run
 * {@code npm install} in that folder once); {@code --peer none} skips it.
 */
public final class LlmPeerBench {
    private LlmPeerBench() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || args[0].startsWith("--")) {
            System.err.println("usage: LlmPeerBench MODEL.gguf [--prompt N] [--gen N] [--runs N] [--context N] [--peer node|none] [--device CPU|CLANG] [--q8-activations true] [--kv f16]");
            System.exit(2);
        }
        Path model = Path.of(args[0]);
        int prompt = 16, gen = 64, runs = 3, context = 512;
        String peer = "node", device = null;
        boolean q8 = false, f16Cache = false;
        for (int i = 1; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--prompt" -> prompt = Integer.parseInt(args[i + 1]);
                case "--gen" -> gen = Integer.parseInt(args[i + 1]);
                case "--runs" -> runs = Integer.parseInt(args[i + 1]);
                case "--context" -> context = Integer.parseInt(args[i + 1]);
                case "--peer" -> peer = args[i + 1];
                case "--device" -> device = args[i + 1];
                case "--q8-activations" -> q8 = Boolean.parseBoolean(args[i + 1]);
                case "--kv" -> f16Cache = args[i + 1].equalsIgnoreCase("f16");
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        MachinePeak peak = MachinePeak.measure();
        long bytesPerToken = weightBytesPerToken(model);
        double bound = peak.streamGBps() * 1e9 / bytesPerToken;
        System.out.printf(Locale.ROOT, "machine: %s%n", peak.summary());
        System.out.printf(Locale.ROOT, "model %s: %.1f MB of weights read per decoded token; bound %.1f tokens/s at %.1f GB/s%n", model.getFileName(),
                bytesPerToken / 1e6, bound, peak.streamGBps());

        long t0 = System.nanoTime();
        int[] ids = new int[prompt];
        for (int i = 0; i < prompt; i++) ids[i] = 300 + i;
        double[] prefill = new double[runs], decode = new double[runs];
        int[] greedy = new int[gen + 1];
        float[] margin = new float[gen + 1]; // Kiln's best logit less its second best, per greedy step
        try (LanguageModel m = LanguageModel.open(model, ModelOptions.defaults().withContextLength(context).withDevice(device).withQuantizedActivations(q8)
                .withKvCacheType(f16Cache ? dev.kiln.types.DType.F16 : dev.kiln.types.DType.F32))) {
            System.out.printf(Locale.ROOT, "kiln (%s%s%s): open %.0f ms%n", device == null ? "default device" : device, q8 ? ", x quantised to Q8_0" : "",
                    f16Cache ? ", f16 KV cache" : "", (System.nanoTime() - t0) / 1e6);
            for (int r = -1; r < runs; r++) { // one untimed run first: the JIT compiles the kernels
                try (Decoder d = m.newDecoder()) {
                    long p0 = System.nanoTime();
                    float[] logits = d.append(ids);
                    long p1 = System.nanoTime();
                    for (int t = 0; t <= gen; t++) {
                        int best = argmax(logits);
                        if (r >= 0) {
                            greedy[t] = best;
                            margin[t] = logits[best] - runnerUp(logits, best);
                        }
                        if (t < gen) logits = d.append(best);
                    }
                    long p2 = System.nanoTime();
                    if (r >= 0) {
                        prefill[r] = prompt / ((p1 - p0) / 1e9);
                        decode[r] = gen / ((p2 - p1) / 1e9);
                    }
                }
            }
        }
        double kilnDecode = median(decode);
        System.out.printf(Locale.ROOT, "kiln: prefill %.1f tokens/s, decode %.1f tokens/s (%.0f%% of the bound); runs prefill %s decode %s%n", median(prefill),
                kilnDecode, 100 * kilnDecode / bound, fmt(prefill), fmt(decode));
        if (peer.equals("none")) return;

        Path script = Path.of("tools", "bench", "llamacpp", "bench.mjs").toAbsolutePath();
        List<String> cmd = new ArrayList<>(List.of("node", script.toString(), model.toAbsolutePath().toString(), "--prompt", "" + prompt, "--gen", "" + gen,
                "--runs", "" + runs, "--threads", "2"));
        Process p = new ProcessBuilder(cmd).directory(script.getParent().toFile()).redirectErrorStream(false).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.waitFor() != 0) throw new IOException("llama.cpp peer failed: " + err);
        String json = out.lines().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElseThrow(() -> new IOException("no result from the peer: " + out));
        JsonNode result = new ObjectMapper().readTree(json);
        double peerPrefill = result.get("prefillTokensPerSecond").asDouble(), peerDecode = result.get("decodeTokensPerSecond").asDouble();
        int[] peerGreedy = new int[result.get("greedy").size()];
        for (int i = 0; i < peerGreedy.length; i++) peerGreedy[i] = result.get("greedy").get(i).asInt();
        System.out.printf(Locale.ROOT, "llama.cpp: prefill %.1f tokens/s, decode %.1f tokens/s (%.0f%% of the bound)%n", peerPrefill, peerDecode,
                100 * peerDecode / bound);
        System.out.printf(Locale.ROOT, "kiln / llama.cpp: prefill %.2fx, decode %.2fx; greedy continuations %s%n", median(prefill) / peerPrefill,
                kilnDecode / peerDecode, Arrays.equals(greedy, peerGreedy) ? "equal" : parting(greedy, peerGreedy, margin));
    }

    /** Weight bytes a decode step reads: every matrix, less the token embedding when it is only looked up (untied). */
    static long weightBytesPerToken(Path model) {
        try (GgufFile f = GgufFile.open(model)) {
            long sum = f.tensors().stream().mapToLong(GgufTensor::byteSize).sum();
            boolean tied = f.findTensor("output.weight").isEmpty();
            return tied ? sum : sum - f.findTensor("token_embd.weight").map(GgufTensor::byteSize).orElse(0L);
        }
    }

    /**
     * Where two greedy continuations part, with Kiln's margin there: two implementations that round differently (llama.cpp
     * quantises activations to 8 bits and keeps an f16 cache) may choose differently only where the top two logits are
     * nearly tied.
     */
    private static String parting(int[] kiln, int[] peer, float[] margin) {
        int at = Arrays.mismatch(kiln, peer);
        String where = at < kiln.length && at < peer.length
                ? String.format(Locale.ROOT, ", where Kiln's top two logits are %.4f apart", margin[at]) : "";
        return "differ from token " + at + where + " (kiln " + Arrays.toString(kiln) + ", llama.cpp " + Arrays.toString(peer) + ")";
    }

    /** The largest value of {@code v} other than at {@code best}. */
    private static float runnerUp(float[] v, int best) {
        float second = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < v.length; i++) if (i != best && v[i] > second) second = v[i];
        return second;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static String fmt(double[] v) {
        StringBuilder b = new StringBuilder("[");
        for (double x : v) b.append(b.length() > 1 ? ", " : "").append(String.format(Locale.ROOT, "%.1f", x));
        return b.append(']').toString();
    }

}
