package dev.kiln.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.io.Reader;

/** Entry point of the {@code kiln} command-line tool. */
@Command(
        name = "kiln",
        mixinStandardHelpOptions = true,
        version = "0.1.0",
        description = "Kiln: a tensor compiler for Java.",
        subcommands = {RunCommand.class, ProfileCommand.class, BenchCommand.class, GenerateCommand.class, ChatCommand.class, ServeCommand.class, OnnxTestCommand.class, DevicesCommand.class, DemoCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Whether progress may be drawn: only when run as the process's own command line on a terminal. */
    final boolean interactive;

    /** Where commands that read lines ({@code kiln chat}) read them: standard input unless a test gave another. */
    final Reader in;

    private Main(boolean interactive, Reader in) {
        this.interactive = interactive;
        this.in = in;
    }

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

    /** {@link #run(PrintWriter, PrintWriter, String...)} with {@code in} as standard input (for {@code kiln chat}). */
    public static int run(Reader in, PrintWriter out, PrintWriter err, String... args) {
        return commandLine(false, in).setOut(out).setErr(err).execute(args);
    }

    private static CommandLine commandLine(boolean interactive) { return commandLine(interactive, null); }

    private static CommandLine commandLine(boolean interactive, Reader in) {
        ErrorHandler errors = new ErrorHandler();
        return new CommandLine(new Main(interactive && Progress.terminalAttached(), in))
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
