package dev.kiln.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the {@code kiln} command-line tool. */
@Command(
        name = "kiln",
        mixinStandardHelpOptions = true,
        version = "0.1.0",
        description = "Kiln: a tensor compiler for Java.",
        subcommands = {DemoCommand.class, DevicesCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Runs the kiln command line and exits with picocli's exit code. */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the kiln command line and returns picocli's exit code (for tests and embedding). */
    public static int run(String... args) {
        return new CommandLine(new Main()).execute(args);
    }

    /** Invoked when no subcommand is given: print usage. */
    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
