package dev.kiln.compile;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;
import java.util.stream.IntStream;

/**
 * A list mapped side by side on the common fork-join pool, the results in the list's order: the independent steps of
 * a compile batch (entries read from disk, misses lowered and rendered, kernels linked), which a prepare on a
 * two-core host otherwise ran one after another on the calling thread.
 *
 * <p>A failure reaches the caller as the exception the function threw (the first in the list's order), not as the
 * copy a parallel stream may make of it on the joining thread, with another message.
 */
final class Concurrently {
    private Concurrently() {}

    /** {@code f} of each of {@code items}, in order; with fewer than two items on the calling thread. */
    @SuppressWarnings("unchecked")
    static <T, R> List<R> map(List<T> items, Function<? super T, ? extends R> f) {
        if (items.size() < 2) return items.stream().<R>map(f).toList();
        Object[] out = new Object[items.size()];
        Throwable[] failed = new Throwable[items.size()];
        IntStream.range(0, items.size()).parallel().forEach(i -> {
            try {
                out[i] = f.apply(items.get(i));
            } catch (RuntimeException | Error e) {
                failed[i] = e;
            }
        });
        for (Throwable t : failed) {
            if (t instanceof RuntimeException e) throw e;
            if (t instanceof Error e) throw e;
        }
        return (List<R>) Collections.unmodifiableList(Arrays.asList(out));
    }
}
