package dev.kiln.onnx;

import onnx.Onnx.StringStringEntryProto;
import onnx.Onnx.TensorProto;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The tensor data a model keeps outside its file ({@code data_location = EXTERNAL}, ONNX's "External Data"): each
 * tensor names a {@code location} relative to the model file's directory, an {@code offset} (0 when absent) and a
 * {@code length} (up to the file's end when absent); {@code checksum} is not verified. Each file is mapped into
 * memory once, read-only, and tensors are slices of the mapping, so weights are not copied onto the heap.
 *
 * <p>The data comes from an untrusted file, so before a byte is mapped: the location must be relative, contain no
 * {@code ..} component and, with symbolic links resolved, lie inside the model's directory; the file must be a
 * regular file; the offset must lie in it and the length must equal the bytes the tensor's shape needs, all of
 * them inside the file. Every refusal is an {@link OnnxFormatException} naming the tensor and the location.
 *
 * <p>Ownership: a model's mappings live in a shared arena owned by this object, created at the first mapping and
 * closed by {@link #close()} (the model's close); a lone TensorProto file's mappings are left to the garbage
 * collector, as there is no owner to close them.
 */
final class ExternalData implements AutoCloseable {
    private final Path directory; // null: the message did not come from a file, there is nothing to resolve against
    private final boolean owned;
    private final Map<Path, MemorySegment> files = new HashMap<>(); // whole files, by real path
    private Path realDirectory;
    private Arena arena;
    private boolean closed;

    private ExternalData(Path directory, boolean owned) {
        this.directory = directory;
        this.owned = owned;
    }

    /** For a model parsed from bytes: any external reference is an error asking for the file. */
    static ExternalData unavailable() { return new ExternalData(null, true); }

    /** Files under {@code directory}, mapped in an arena that {@link #close()} closes. */
    static ExternalData ownedBy(Path directory) { return new ExternalData(directory.toAbsolutePath(), true); }

    /** Files under {@code directory}, mapped in arenas the garbage collector closes when no tensor uses them. */
    static ExternalData collected(Path directory) { return new ExternalData(directory.toAbsolutePath(), false); }

    /** One tensor's {@code external_data} entries: {@code length} is -1 when absent (the rest of the file). */
    record Reference(String location, long offset, long length) {
        static Reference of(TensorProto p, String what) {
            String location = null;
            long offset = 0, length = -1;
            List<String> seen = new ArrayList<>();
            for (StringStringEntryProto e : p.getExternalDataList()) {
                if (seen.contains(e.getKey())) throw new OnnxFormatException(what, "external_data has the key '" + e.getKey() + "' twice");
                seen.add(e.getKey());
                switch (e.getKey()) {
                    case "location" -> location = e.getValue();
                    case "offset" -> offset = number(e, what);
                    case "length" -> length = number(e, what);
                    default -> { } // checksum (not verified), basepath (written by ONNX's Python tools) and keys of later versions
                }
            }
            if (location == null || location.isEmpty()) {
                throw new OnnxFormatException(what, "data_location is EXTERNAL but external_data has no location (keys " + seen + ")");
            }
            return new Reference(location, offset, length);
        }

        private static long number(StringStringEntryProto e, String what) {
            String v = e.getValue();
            try {
                if (!v.isEmpty() && v.chars().allMatch(c -> c >= '0' && c <= '9')) return Long.parseLong(v);
            } catch (NumberFormatException tooLarge) {
                // reported below, as any other value that is not a byte count
            }
            throw new OnnxFormatException(what, "external_data " + e.getKey() + " is '" + v + "', expected a byte count (a non-negative decimal integer)");
        }
    }

    /**
     * The {@code need} bytes of {@code p}'s data (read-only), after every check of the class comment.
     *
     * @param needs how the shape arrives at {@code need}, for messages ("6 elements of f32")
     * @param what the tensor, for messages
     * @throws OnnxFormatException   if a check fails or the file cannot be read
     * @throws IllegalStateException if this model has been closed
     */
    synchronized MemorySegment bytes(TensorProto p, long need, String needs, String what) {
        if (closed) throw new IllegalStateException(what + ": the model has been closed, its external data files are unmapped");
        Reference ref = Reference.of(p, what);
        String at = "external data location '" + ref.location() + "'";
        Path file = resolve(ref.location(), at, what);
        MemorySegment whole = map(file, at, what);
        long size = whole.byteSize();
        if (ref.offset() > size) {
            throw new OnnxFormatException(what, at + ": offset " + ref.offset() + " is past the end of the file (" + size + " bytes)");
        }
        long length = ref.length() < 0 ? size - ref.offset() : ref.length();
        if (length != need) {
            String given = ref.length() < 0 ? "the " + length + " bytes from offset " + ref.offset() + " to the end of the file (no length given) are"
                    : "length " + length + " is";
            throw new OnnxFormatException(what, at + ": " + given + " not the " + need + " bytes that " + needs + " need");
        }
        if (length > size - ref.offset()) {
            throw new OnnxFormatException(what, at + ": bytes " + ref.offset() + " to " + (ref.offset() + length) + " reach past the end of the file ("
                    + size + " bytes)");
        }
        return whole.asSlice(ref.offset(), length);
    }

    /** The real path of {@code location}, refused unless it is a regular file inside the model's directory. */
    private Path resolve(String location, String at, String what) {
        if (directory == null) {
            throw new OnnxFormatException(what, at + " is relative to the model file's directory, but this model was not loaded from a file;"
                    + " load it with OnnxModel.load(Path) from its directory");
        }
        if (location.indexOf('\0') >= 0) throw new OnnxFormatException(what, at + " contains a NUL character");
        // ONNX locations are POSIX paths; a model written on Windows may separate with '\', so both count as separators here
        String posix = location.replace('\\', '/');
        if (posix.startsWith("/") || posix.matches("[A-Za-z]:.*")) {
            throw new OnnxFormatException(what, at + " is an absolute path; ONNX external data must be a path relative to the model's directory");
        }
        List<String> parts = new ArrayList<>();
        for (String part : posix.split("/")) {
            if (part.equals("..")) {
                throw new OnnxFormatException(what, at + " has a '..' component; ONNX external data must lie in the model's directory or below it");
            }
            if (!part.isEmpty() && !part.equals(".")) parts.add(part);
        }
        if (parts.isEmpty()) throw new OnnxFormatException(what, at + " names no file");
        Path candidate;
        try {
            candidate = directory.resolve(String.join("/", parts));
        } catch (InvalidPathException e) {
            throw new OnnxFormatException(what, at + " is not a valid path (" + e.getMessage() + ")", e);
        }
        Path real;
        try {
            if (realDirectory == null) realDirectory = directory.toRealPath();
            real = candidate.toRealPath();
        } catch (NoSuchFileException e) {
            throw new OnnxFormatException(what, at + ": the file " + candidate + " does not exist", e);
        } catch (IOException e) {
            throw new OnnxFormatException(what, at + ": cannot resolve " + candidate + " (" + ProtoFiles.reason(e) + ")", e);
        }
        // the checks above see the text only: a symbolic link inside the directory may still point anywhere
        if (!real.startsWith(realDirectory)) {
            throw new OnnxFormatException(what, at + " resolves to " + real + " through a symbolic link, outside the model's directory " + realDirectory);
        }
        if (!Files.isRegularFile(real, LinkOption.NOFOLLOW_LINKS)) throw new OnnxFormatException(what, at + ": " + real + " is not a regular file");
        return real;
    }

    /** The whole file, mapped read-only once per model. */
    private MemorySegment map(Path file, String at, String what) {
        MemorySegment whole = files.get(file);
        if (whole != null) return whole;
        // the real path has no links left; NOFOLLOW_LINKS refuses one swapped in since it was resolved
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            long size = channel.size();
            whole = size == 0 ? MemorySegment.ofArray(new byte[0]) : channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena());
        } catch (IOException e) {
            throw new OnnxFormatException(what, at + ": cannot map " + file + " (" + ProtoFiles.reason(e) + ")", e);
        }
        files.put(file, whole);
        return whole;
    }

    private Arena arena() {
        if (!owned) return Arena.ofAuto(); // one per file: each mapping goes when no tensor slices it any more
        // shared: plans read the weights from their workers' threads
        if (arena == null) arena = Arena.ofShared();
        return arena;
    }

    /** Whether a file has been mapped and not yet released. */
    synchronized boolean hasMappings() { return !closed && !files.isEmpty(); }

    /**
     * Unmaps every file: tensors that slice them fail on their next read with an {@link IllegalStateException}.
     * Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        files.clear();
        if (arena != null) arena.close();
    }
}
