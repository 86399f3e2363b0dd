package dev.kiln.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code kiln demo}: a small end-to-end demonstration. */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Run a small Kiln demo.")
public final class DemoCommand implements Callable<Integer> {

    @Override
    public Integer call() {
        System.out.println("Kiln demo");
        return 0;
    }
}
