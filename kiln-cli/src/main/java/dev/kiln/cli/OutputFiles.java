package dev.kiln.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A command's output files, written all or nothing: each is first written to a temporary file beside
 * its target ({@link #stage}); {@link #commit()} then renames them all into place. Closing without a
 * commit deletes the temporary files, and a directory this object created if it is still empty, so a
 * failed command leaves nothing behind.
 *
 * <p>The renames are atomic one by one; only a failure between two renames (a full disk cannot cause one)
 * could leave some targets renewed and others not.
 */
final class OutputFiles implements AutoCloseable {
    private final Map<Path, Path> staged = new LinkedHashMap<>(); // target -> temporary file
    private final List<Path> createdDirs = new ArrayList<>();
    private boolean committed;

    /**
     * A temporary path to write {@code target}'s content to (creating missing parent directories).
     *
     * @throws IllegalArgumentException if {@code target} was staged already or is a directory, or a file is where a
     *                                  directory is needed
     */
    Path stage(Path target) {
        Path t = target.toAbsolutePath().normalize();
        if (staged.containsKey(t)) throw new IllegalArgumentException("output " + target + " would be written twice");
        if (Files.isDirectory(t)) throw new IllegalArgumentException("output " + target + " is a directory");
        try {
            createDirectories(t.getParent());
            Path tmp = Files.createTempFile(t.getParent(), "." + t.getFileName() + ".", ".part");
            staged.put(t, tmp);
            return tmp;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }

    private void createDirectories(Path dir) throws IOException {
        List<Path> missing = new ArrayList<>();
        Path d0 = dir;
        for (; d0 != null && !Files.exists(d0); d0 = d0.getParent()) missing.addFirst(d0);
        if (d0 != null && !Files.isDirectory(d0)) {
            throw new IllegalArgumentException("cannot write into " + dir + ": " + d0 + " is a file, not a directory");
        }
        for (Path d : missing) {
            Files.createDirectory(d);
            createdDirs.addFirst(d); // deepest first, for clean-up
        }
    }

    /** Moves every staged file onto its target; returns the targets in staging order. */
    List<Path> commit() {
        try {
            for (var e : staged.entrySet()) {
                Files.move(e.getValue(), e.getKey(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write output: " + e.getMessage(), e);
        }
        committed = true;
        return List.copyOf(staged.keySet());
    }

    /** Without a commit: deletes the temporary files and the directories created for them. */
    @Override
    public void close() {
        if (committed) return;
        for (Path tmp : staged.values()) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // best effort: the command is failing already and reports that failure
            }
        }
        for (Path d : createdDirs) {
            try {
                Files.deleteIfExists(d); // fails (and stays) if something else was put there meanwhile
            } catch (IOException ignored) {
                // not empty: not ours to delete
            }
        }
    }

    /**
     * A file name made from a tensor name: characters other than letters, digits, '.', '-' and '_'
     * become '_' (ONNX names may hold '/' or ':').
     */
    static String safeName(String name) {
        String s = name.replaceAll("[^A-Za-z0-9._-]", "_");
        return s.isEmpty() || s.startsWith(".") ? "_" + s : s;
    }
}
