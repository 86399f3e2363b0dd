package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * The base of every kiln command: {@code --help}, {@code --version} and {@code --verbose}, and the
 * command line's output and error writers (results go to {@link #out()}; progress and errors to
 * {@link #err()}). Bad input is thrown as an {@link IllegalArgumentException} and reported by
 * {@link ErrorHandler} as one line with exit code 2.
 */
abstract class KilnCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    VerboseOption verbose;

    /** Runs the command; its results are flushed even when it fails half way. */
    @Override
    public final Integer call() throws Exception {
        try {
            return execute();
        } finally {
            out().flush();
        }
    }

    /** The command's work; returns the exit code. */
    abstract int execute() throws Exception;

    /** Where results go (standard output unless a test replaced it). */
    PrintWriter out() { return spec.commandLine().getOut(); }

    /** Where progress and diagnostics go (standard error unless a test replaced it). */
    PrintWriter err() { return spec.commandLine().getErr(); }

    /**
     * A progress indicator for work that may take more than a second; drawn on {@link #err()} only when
     * the command line runs as the process's own (not embedded or under test) and a terminal is attached.
     */
    Progress progress(String label) {
        return Progress.start(label, err(), spec.root().userObject() instanceof Main m && m.interactive);
    }

    /** The language model at {@code model}, opened with the options of {@code flags} while a progress line shows. */
    LanguageModel openLanguageModel(Path model, SamplingFlags flags) {
        ModelOptions options = flags.modelOptions(model);
        try (Progress p = progress("loading " + model)) {
            return LanguageModel.open(model, options);
        }
    }
}
