package dev.kiln.llm.mapping;

import dev.kiln.llm.ModelFileException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.BiFunction;

/**
 * Maps a model file read-only into a shared arena (decode threads read the weights in place) for its reader. Not
 * exported: the GGUF and safetensors readers share it.
 */
public final class MappedFiles {
    private MappedFiles() {}

    /**
     * Maps {@code file} and hands the arena and the mapping to {@code open}, which keeps the arena (its reader closes
     * it); if {@code open} throws, or the file cannot be read, the arena is closed here.
     *
     * @throws ModelFileException if the file cannot be read, or as {@code open} throws
     */
    public static <T> T open(Path file, BiFunction<Arena, MemorySegment, T> open) {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment data = size == 0 ? MemorySegment.ofArray(new byte[0]) : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return open.apply(arena, data);
        } catch (IOException e) {
            arena.close();
            throw ModelFileException.unreadable(file, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }
}
