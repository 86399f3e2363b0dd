package dev.kiln.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;

/** Entry point of the {@code kiln} command-line tool. */
@Command(
        name = "kiln",
        mixinStandardHelpOptions = true,
        version = "0.1.0",
        description = "Kiln: a tensor compiler for Java.",
        subcommands = {RunCommand.class, ProfileCommand.class, BenchCommand.class, GenerateCommand.class, OnnxTestCommand.class, DevicesCommand.class, DemoCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Whether progress may be drawn: only when run as the process's own command line on a terminal. */
    final boolean interactive;

    private Main(boolean interactive) { this.interactive = interactive; }

    /** Runs the kiln command line and exits with its exit code. */
    public static void main(String[] args) {
        System.exit(commandLine(true).execute(args));
    }

    /** Runs the kiln command line on standard output and error and returns its exit code (for embedding). */
    public static int run(String... args) {
        return commandLine(false).execute(args);
    }

    /**
     * Runs the kiln command line with results written to {@code out} and diagnostics to {@code err},
     * and returns its exit code: 0 on success, 2 for bad input, 1 for other failures.
     */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        return commandLine(false).setOut(out).setErr(err).execute(args);
    }

    private static CommandLine commandLine(boolean interactive) {
        ErrorHandler errors = new ErrorHandler();
        return new CommandLine(new Main(interactive && Progress.terminalAttached()))
                .setExecutionStrategy(errors)
                .setExecutionExceptionHandler(errors)
                .setParameterExceptionHandler(errors);
    }

    /** Invoked when no subcommand is given: print usage. */
    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
