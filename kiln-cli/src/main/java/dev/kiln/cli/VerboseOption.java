package dev.kiln.cli;

import picocli.CommandLine.Option;

/** {@code --verbose}: errors come with their stack trace. Read by {@link ErrorHandler} from the parse result. */
final class VerboseOption {
    static final String NAME = "--verbose";

    @Option(names = NAME, description = "Print the stack trace of an error, not just its one-line message.")
    boolean verbose;
}
