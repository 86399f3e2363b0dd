package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.SamplingOptions;
import dev.kiln.models.SmallModels;
import dev.kiln.models.TinyDecoder;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Session;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.KernelProfile;
import dev.kiln.runtime.ProfileReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.io.PrintWriter;

/**
 * {@code kiln demo}: prepares the demo MLP and transformer block as execution plans on the default
 * device, runs them, and prints their outputs and per-kernel profiles; decodes through KV-cache handles; and ends with
 * text streamed from a tiny trained Llama ({@link TinyLlama}).
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Compile and run a small MLP and a transformer block with seeded weights on the default device, with a per-kernel profile,"
                + " decode tokens one by one through KV-cache handles, then write text with a tiny Llama trained on Python's docstrings.")
final class DemoCommand extends KilnCommand {

    /** The longest --seq: the demo's attention holds seq x seq scores per head, and it is a demo of short sequences. */
    static final int MAX_SEQ = 4096;

    @Option(names = "--seq", description = "Sequence length of the transformer input, 1 to " + MAX_SEQ + " (default: ${DEFAULT-VALUE}).")
    int seq = 8;

    @Override
    int execute() {
        // checked before anything is printed: a bad length must not fail half way through the demo's output
        if (seq < 1 || seq > MAX_SEQ) throw new IllegalArgumentException("--seq: expected a sequence length from 1 to " + MAX_SEQ + ", got " + seq);
        out().println("Kiln demo on " + Tensor.defaultDevice());

        Tensor x = Tensor.randn(100, 4, 16).realize();
        run(out(), "MLP 16-32-32-10 + softmax", x, SmallModels.mlp(x));

        Tensor tokens = Tensor.randn(200, 1, seq, 32).realize();
        run(out(), "transformer block (d=32, 4 heads, causal)", tokens, SmallModels.transformerBlock(tokens, 4));
        decode(out(), 32, 32, 64);
        write(out(), List.of("Return the number of", "If the", "This module provides"), 48);
        return 0;
    }

    /**
     * Continues each of {@code prompts} with the tiny Llama ({@link TinyLlama}), greedily, until its end-of-text token or
     * {@code tokens} tokens, streamed as they are made, after one unprinted generation that lets the JIT compile the
     * decode path; then the speeds.
     */
    private static void write(PrintWriter w, List<String> prompts, int tokens) {
        w.printf(Locale.ROOT, "%na tiny Llama (3 million parameters, Q8_0) trained on Python's docstrings, greedy:%n");
        w.flush();
        try (LanguageModel lm = TinyLlama.open()) {
            lm.generate(prompts.getFirst(), new GenerationOptions(tokens, List.of(), true, SamplingOptions.greedy()));
            long generated = 0, nanos = 0;
            for (String prompt : prompts) {
                w.print("  " + prompt);
                long start = System.nanoTime();
                GenerationResult r = lm.generate(prompt, new GenerationOptions(tokens, List.of(), false, SamplingOptions.greedy()), t -> {
                    w.print(t.text().replace("\n", "\n  "));
                    w.flush();
                });
                nanos += System.nanoTime() - start;
                generated += r.stats().generatedTokens();
                w.println();
            }
            w.printf(Locale.ROOT, "  (%d tokens in %.0f ms: %.0f tokens/s, prompts included)%n", generated, nanos / 1e6, generated / (nanos / 1e9));
        }
    }

    /**
     * Decodes {@code steps} tokens one by one through KV-cache handles, and checks every step's logits
     * against recomputing the whole sequence.
     */
    private static void decode(PrintWriter w, int steps, int dim, int vocab) {
        float[][] wts = new float[4][];
        for (int i = 0; i < 4; i++) wts[i] = Tensor.randn(300 + i, dim, i == 3 ? vocab : dim).mul(1.0 / Math.sqrt(dim)).toFloatArray();
        Session session = Session.on(Tensor.defaultDevice());
        try (CompiledGraph step = session.compile(TinyDecoder.decodeStep(steps, dim, vocab));
             CompiledGraph full = session.compile(TinyDecoder.fullSequence(steps, dim, vocab))) {
            TinyDecoder.setWeights(step, wts[0], wts[1], wts[2], wts[3]);
            TinyDecoder.setWeights(full, wts[0], wts[1], wts[2], wts[3]);
            TinyDecoder.bindCaches(step, steps, dim);
            float[] xs = Tensor.randn(400, steps, dim).toFloatArray();
            float[][] logits = new float[steps][];
            long start = System.nanoTime();
            for (int t = 0; t < steps; t++) {
                step.setVariable("pos", t);
                logits[t] = step.run(Map.of("x", Arrays.copyOfRange(xs, t * dim, (t + 1) * dim))).getFirst();
            }
            double perToken = (System.nanoTime() - start) / 1e3 / steps;
            float[] all = full.run(Map.of("xs", xs)).getFirst();
            double worst = 0;
            int[] tokens = new int[steps];
            for (int t = 0; t < steps; t++) {
                for (int j = 0; j < vocab; j++) {
                    worst = Math.max(worst, Math.abs(logits[t][j] - all[t * vocab + j]));
                    if (logits[t][j] > logits[t][tokens[t]]) tokens[t] = j;
                }
            }
            w.printf(Locale.ROOT, "%ntoken-by-token decode through KV-cache handles (1 head, d=%d, vocab %d, %d steps)%n"
                            + "  argmax per step %s%n  %.1f us per token (first run, JIT warming up); largest difference from recomputing the sequence: %.2e%n",
                    dim, vocab, steps, Arrays.toString(tokens), perToken, worst);
        }
    }

    private static void run(PrintWriter w, String name, Tensor input, Tensor output) {
        long start = System.nanoTime();
        try (ExecutionPlan plan = output.prepare()) {
            double prepareMs = (System.nanoTime() - start) / 1e6;
            // warm up until the JIT has compiled the kernels (bounded: at most 5000 runs or 1.5 seconds)
            long warm = System.nanoTime();
            for (int i = 0; i < 5000 && System.nanoTime() - warm < 1_500_000_000L; i++) plan.execute();
            List<KernelProfile> profile = plan.executeProfiled();
            Buffer out = plan.outputBuffer();
            double[] v = new double[(int) out.count()];
            for (int i = 0; i < v.length; i++) v[i] = out.getDouble(i);
            double sum = Arrays.stream(v).sum();
            w.printf(Locale.ROOT, "%n%s%n  input  %s %s%n  output %s %s   (prepared in %.1f ms: %d kernels)%n  first  %s%n  sum    %.6f%n",
                    name, Arrays.toString(input.dims()), input.dtype(), Arrays.toString(output.dims()), output.dtype(), prepareMs,
                    plan.kernels().size(), Arrays.stream(Arrays.copyOf(v, Math.min(6, v.length)))
                            .mapToObj(d -> String.format(Locale.ROOT, "%.5f", d)).toList(), sum);
            w.print(ProfileReport.table(profile));
        }
    }
}
