package dev.kiln.cli;

import dev.kiln.Tensor;
import picocli.CommandLine.Command;

import java.util.Arrays;
import java.util.concurrent.Callable;

/** {@code kiln demo}: evaluates a small computation on the default device. */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Evaluate a small computation on the default device.")
public final class DemoCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        Tensor x = Tensor.arange(12).reshape(3, 4).cast(dev.kiln.DType.F32);
        System.out.println("Kiln demo on " + Tensor.defaultDevice() + ": softmax of " + Arrays.toString(x.dims()));
        System.out.println(Arrays.toString(x.softmax(-1).toFloatArray()));
        return 0;
    }
}
