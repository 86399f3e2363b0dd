package dev.kiln.cli;

import picocli.CommandLine;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/**
 * Turns every failure into one line on the error stream, {@code kiln COMMAND: MESSAGE}:
 * <ul>
 *   <li>bad input — an {@link IllegalArgumentException} of any kind (this includes
 *       {@link dev.kiln.io.NpyFormatException}, and any importer's format exception that extends it), a
 *       missing or unreadable file, or a command-line syntax error — exits with {@value #BAD_INPUT};</li>
 *   <li>an input too large or too deep for this JVM — an {@link OutOfMemoryError} or {@link StackOverflowError}
 *       during a command, also when it reached here as the cause of another exception — exits with
 *       {@value #BAD_INPUT} too, with the heap or stack option to raise;</li>
 *   <li>anything else (a device failure, a bug) exits with {@value #FAILURE}.</li>
 * </ul>
 * The stack trace follows only when {@code --verbose} was given. Picocli lets errors pass its exception handler,
 * so this class is also the command line's execution strategy: it runs the command and hands those two errors
 * on to {@link #handleExecutionException}.
 */
final class ErrorHandler implements CommandLine.IExecutionExceptionHandler, CommandLine.IParameterExceptionHandler,
        CommandLine.IExecutionStrategy {
    static final int BAD_INPUT = 2;
    static final int FAILURE = 1;

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        cmd.getErr().println(prefix(cmd) + oneLine(ex.getMessage()) + " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')");
        cmd.getErr().flush();
        return BAD_INPUT;
    }

    /** Runs the command as picocli does by default; an out-of-memory or stack overflow error becomes an exception for the handler. */
    @Override
    public int execute(ParseResult parseResult) {
        try {
            return new CommandLine.RunLast().execute(parseResult);
        } catch (OutOfMemoryError | StackOverflowError e) {
            ParseResult last = parseResult;
            while (last.subcommand() != null) last = last.subcommand();
            throw new CommandLine.ExecutionException(last.commandSpec().commandLine(), String.valueOf(e), e);
        }
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cmd, ParseResult parseResult) {
        PrintWriter err = cmd.getErr();
        Error exhausted = exhausted(ex);
        boolean bad = exhausted != null || isBadInput(ex);
        String message = exhausted != null ? exhaustedMessage(exhausted)
                : bad ? badInputMessage(ex) : ex.getClass().getSimpleName() + ": " + oneLine(String.valueOf(ex.getMessage()));
        boolean verbose = verbose(parseResult);
        err.println(prefix(cmd) + message + (bad || verbose ? "" : " (run with --verbose for the stack trace)"));
        if (verbose) ex.printStackTrace(err);
        err.flush();
        return bad ? BAD_INPUT : FAILURE;
    }

    /** The out-of-memory or stack overflow error that {@code t} is or was caused by, or null. */
    static Error exhausted(Throwable t) {
        for (int depth = 0; t != null && depth < 32; t = t.getCause(), depth++) { // bounded: a cause chain may loop
            if (t instanceof OutOfMemoryError || t instanceof StackOverflowError) return (Error) t;
        }
        return null;
    }

    /** One line saying what ran out and what to change; never the error's class name or trace. */
    static String exhaustedMessage(Error e) {
        String detail = e.getMessage() == null ? "" : ": " + oneLine(e.getMessage());
        if (e instanceof StackOverflowError) {
            return "stack overflow: the input nests or recurses too deeply for the thread stack; try a smaller input or -Xss";
        }
        long heapMiB = Runtime.getRuntime().maxMemory() >> 20;
        return "out of memory" + detail + " (heap " + heapMiB + " MiB); try a smaller input or -Xmx";
    }

    /** Whether {@code t} reports bad input rather than a failure of Kiln or the machine. */
    static boolean isBadInput(Throwable t) {
        return t instanceof IllegalArgumentException || fileProblem(t) != null;
    }

    private static Throwable fileProblem(Throwable t) {
        Throwable c = t instanceof UncheckedIOException u ? u.getCause() : t;
        return c instanceof NoSuchFileException || c instanceof AccessDeniedException || c instanceof NotDirectoryException
                || c instanceof FileAlreadyExistsException ? c : null;
    }

    private static String badInputMessage(Throwable t) {
        Throwable f = fileProblem(t);
        return switch (f) {
            case NoSuchFileException e -> "no such file: " + e.getFile();
            case AccessDeniedException e -> "permission denied: " + e.getFile();
            case NotDirectoryException e -> "not a directory: " + e.getFile();
            case FileAlreadyExistsException e -> "a file is in the way: " + e.getFile();
            case null, default -> oneLine(t.getMessage());
        };
    }

    private static boolean verbose(ParseResult pr) {
        for (ParseResult p = pr; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption(VerboseOption.NAME)) return true;
        }
        return false;
    }

    private static String prefix(CommandLine cmd) { return cmd.getCommandSpec().qualifiedName() + ": "; }

    /** Multi-line messages (e.g. a compiler's output) folded onto one line. */
    static String oneLine(String s) { return s == null ? "" : s.strip().replaceAll("\\s*\\R\\s*", " | "); }
}
