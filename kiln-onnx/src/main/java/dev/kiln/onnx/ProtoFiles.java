package dev.kiln.onnx;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Parses one protobuf message (a ModelProto, a TensorProto) from a file. A regular file is mapped, not read into a
 * byte array: parsing copies only the fields into the message, so a model of N bytes needs N bytes of heap, not 2N.
 */
final class ProtoFiles {
    private ProtoFiles() {}

    /**
     * The largest message protobuf parses: its sizes and offsets are Java ints, and a mapped {@link ByteBuffer} ends
     * there too. ONNX keeps larger models' weights in external data files for this reason.
     */
    static final long LIMIT = Integer.MAX_VALUE;

    /** Nesting deeper than this (graphs in attributes) is refused rather than overflowing the stack. */
    private static final int RECURSION_LIMIT = 256;

    /** The message's parser over a stream that {@link #input} configured. */
    interface Parser<T> {
        T parse(CodedInputStream in) throws IOException;
    }

    /**
     * The message in {@code file}.
     *
     * @param kind what the file should hold, for messages ("ONNX ModelProto")
     * @param tooLarge what to do instead when the file is over {@link #LIMIT}, for the message
     * @throws OnnxFormatException if the file cannot be read, is over protobuf's limit, or does not parse
     */
    static <T> T parse(Path file, String kind, String tooLarge, Parser<T> parser) {
        String src = file.toString();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            if (!Files.isRegularFile(file)) {
                // a pipe or a device has no size to check or map: streamed, protobuf's own limit still applies
                return parser.parse(input(CodedInputStream.newInstance(Channels.newInputStream(channel))));
            }
            long size = channel.size();
            if (size > LIMIT) {
                throw new OnnxFormatException(src, "the file is " + size + " bytes (" + gib(size) + "), over protobuf's limit of 2 GiB ("
                        + LIMIT + " bytes) for one message; " + tooLarge);
            }
            // an empty mapping is not allowed on every platform, and there is nothing to map
            ByteBuffer bytes = size == 0 ? ByteBuffer.allocate(0) : channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena).asByteBuffer();
            // the parser copies every field it keeps (no aliasing), so the mapping may go when this returns
            return parser.parse(input(CodedInputStream.newInstance(bytes)));
        } catch (InvalidProtocolBufferException e) {
            throw new OnnxFormatException(src, "not a valid " + kind + " (" + e.getMessage() + ")", e);
        } catch (IOException e) {
            throw new OnnxFormatException(src, "cannot read the file (" + reason(e) + ")", e);
        }
    }

    /** {@code in} set up as every ONNX message is parsed. */
    static CodedInputStream input(CodedInputStream in) {
        in.setRecursionLimit(RECURSION_LIMIT);
        return in;
    }

    private static String gib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }

    /** What went wrong with a file, in words: the JDK's exceptions for a missing file or a refused access carry only a path. */
    static String reason(IOException e) {
        return switch (e) {
            case java.nio.file.NoSuchFileException n -> "no such file";
            case java.nio.file.AccessDeniedException a -> "permission denied";
            case java.nio.file.FileSystemException f when f.getReason() != null -> f.getReason();
            default -> e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        };
    }
}
