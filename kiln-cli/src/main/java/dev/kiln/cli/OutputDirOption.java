package dev.kiln.cli;

import picocli.CommandLine.Option;

import java.nio.file.Path;

/** {@code --output-dir DIR}: where a command writes its files (created if missing). */
final class OutputDirOption {
    @Option(names = "--output-dir", paramLabel = "DIR", defaultValue = ".",
            description = "Directory for the written files, created if missing (default: the current directory).")
    Path dir;
}
