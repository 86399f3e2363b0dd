package dev.kiln.ir;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * A thread-safe memo table with a size bound: the least recently used entries leave first. Keys are
 * value types or interned {@link UOp}s (identity is structure), so compiler stages can memoise per
 * structure without holding every graph ever seen.
 */
public final class BoundedCache<K, V> {
    private final Map<K, V> map;

    public BoundedCache(int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("cache capacity must be >= 1, got " + capacity);
        this.map = new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) { return size() > capacity; }
        };
    }

    /**
     * The value for {@code key}, computed by {@code compute} on a miss. The computation runs outside the
     * lock, so two threads may compute the same value once each; both results are equal.
     */
    public V get(K key, Function<K, V> compute) {
        synchronized (map) {
            V v = map.get(key);
            if (v != null) return v;
        }
        V v = compute.apply(key);
        synchronized (map) {
            map.putIfAbsent(key, v);
            return map.get(key);
        }
    }

    public int size() {
        synchronized (map) {
            return map.size();
        }
    }
}
