package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code kiln demo}: evaluates the demo MLP and transformer block and prints what came out. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Evaluate a small MLP and a transformer block with seeded weights on the default device.")
public final class DemoCommand implements Callable<Integer> {

    @Option(names = "--seq", description = "Sequence length of the transformer input (default: ${DEFAULT-VALUE}).")
    int seq = 8;

    @Override
    public Integer call() {
        System.out.println("Kiln demo on " + Tensor.defaultDevice());

        Tensor x = Tensor.randn(100, 4, 16);
        report("MLP 16-32-32-10 + softmax", x, SmallModels.mlp(x));

        Tensor tokens = Tensor.randn(200, 1, seq, 32);
        report("transformer block (d=32, 4 heads, causal)", tokens, SmallModels.transformerBlock(tokens, 4));
        return 0;
    }

    private static void report(String name, Tensor input, Tensor output) {
        long start = System.nanoTime();
        double[] v = output.toDoubleArray();
        double ms = (System.nanoTime() - start) / 1e6;
        double sum = Arrays.stream(v).sum();
        double[] head = Arrays.copyOf(v, Math.min(6, v.length));
        System.out.printf(Locale.ROOT, "%n%s%n  input  %s %s%n  output %s %s   (%.1f ms)%n  first  %s%n  sum    %.6f%n",
                name, Arrays.toString(input.dims()), input.dtype(), Arrays.toString(output.dims()), output.dtype(), ms,
                Arrays.stream(head).mapToObj(d -> String.format(Locale.ROOT, "%.5f", d)).toList(), sum);
    }
}
