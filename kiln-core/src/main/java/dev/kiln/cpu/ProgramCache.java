package dev.kiln.cpu;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.ProgramCodec;
import dev.kiln.runtime.CodeFingerprint;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.KernelCache;
import dev.kiln.schedule.ScheduleItem;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * The CPU device's front-end cache: per kernel structure, the optimised program and its Java source,
 * so that preparing a kernel met before skips lowering, optimisation and rendering — within a process
 * (the same layer in twelve blocks) and, on disk, across processes (a server restarting with a model it
 * has prepared before). The class files stay in the device's {@link KernelCache} of kernels.
 *
 * <p><b>Key.</b> A kernel's structure is its graph {@linkplain ProgramCodec#encodeKernel encoded} with its
 * inputs as placeholders of their position, dtype and shape: every op, dtype, argument (shapes, axes,
 * constants' bits, symbolic variables) and edge. Together with the identity — the device's compiler
 * identity (Java version, architecture, vector width, render format), the core count the heuristic
 * threads for, and the {@link CodeFingerprint} of Kiln's classes, since the program is what Kiln's own
 * lowering, heuristics and renderer make of the kernel — it decides the entry. A different Kiln build
 * never reads another's entries.
 *
 * <p><b>Disk.</b> Entries live in the {@code programs} folder of {@link KernelCache#cacheRoot()} and
 * follow {@link KernelCache}'s rules: checksummed, published atomically, a corrupt or undecodable entry
 * discarded with a warning and rebuilt. Where Kiln's classes cannot be fingerprinted (not loaded from a
 * readable jar or folder), or the cache location is {@code off}, the cache is memory-only.
 */
final class ProgramCache {
    /**
     * What the cache keeps per kernel structure.
     *
     * @param program the optimised program, named {@code kernel} (callers rename it)
     * @param source  its Java source
     */
    record Entry(KernelProgram program, String source) {}

    private final KernelCache<Entry> cache;
    private final CompilerIdentity identity;

    /** A cache over {@code cache} whose entries are made by a compiler with {@code identity}. */
    ProgramCache(KernelCache<Entry> cache, CompilerIdentity identity) {
        this.cache = cache;
        this.identity = identity;
    }

    /**
     * The process's cache for a device with {@code deviceIdentity}: on disk when the cache location is on
     * and Kiln's classes have a fingerprint, else in memory.
     */
    static ProgramCache create(CompilerIdentity deviceIdentity) {
        Optional<String> code = KernelCache.cacheRoot().isPresent() ? CodeFingerprint.of(ProgramCache.class) : Optional.empty();
        KernelCache<Entry> cache = code.isPresent()
                ? KernelCache.inCacheFolder("programs", ProgramCache::decode) : KernelCache.inMemory(ProgramCache::decode);
        return new ProgramCache(cache, deviceIdentity.with("kiln.code", code.orElse("this process")));
    }

    /**
     * The entries of {@code kernels}, in order. Structures found in neither memory nor disk are made by
     * {@code build} (given one of their kernels), once each, then published.
     */
    List<Entry> get(List<ScheduleItem.Kernel> kernels, Function<ScheduleItem.Kernel, Entry> build) {
        List<KernelCache.Request<String>> requests = new ArrayList<>();
        Map<String, ScheduleItem.Kernel> byKey = new HashMap<>();
        for (ScheduleItem.Kernel kernel : kernels) {
            String key = key(kernel);
            byKey.putIfAbsent(key, kernel);
            requests.add(new KernelCache.Request<>(key, key, identity));
        }
        Map<String, Entry> found = cache.getOrCompileAll(requests, misses -> {
            List<byte[]> made = new ArrayList<>();
            for (var m : misses) made.add(encode(build.apply(byKey.get(m.key()))));
            return made;
        });
        List<Entry> out = new ArrayList<>();
        for (var r : requests) out.add(found.get(r.key()));
        return out;
    }

    /** The cache key of a kernel: its structure's {@linkplain ProgramCodec#encodeKernel encoding}, one char per byte. */
    static String key(ScheduleItem.Kernel kernel) {
        return new String(ProgramCodec.encodeKernel(kernel), StandardCharsets.ISO_8859_1);
    }

    KernelCache.Stats stats() { return cache.stats(); }

    CompilerIdentity identity() { return identity; }

    /** The program's encoding, then the source in UTF-8. */
    static byte[] encode(Entry e) {
        byte[] program = ProgramCodec.encode(e.program());
        byte[] source = e.source().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(Integer.BYTES + program.length + source.length)
                .putInt(program.length).put(program).put(source).array();
    }

    /**
     * The entry {@link #encode} wrote.
     *
     * @throws IllegalArgumentException if the bytes are not a valid entry
     */
    static Entry decode(byte[] bytes) {
        if (bytes.length < Integer.BYTES) throw new IllegalArgumentException("program cache entry: " + bytes.length + " bytes");
        int n = ByteBuffer.wrap(bytes).getInt();
        if (n < 0 || n > bytes.length - Integer.BYTES) {
            throw new IllegalArgumentException("program cache entry: program of " + n + " bytes in an entry of " + bytes.length);
        }
        KernelProgram program = ProgramCodec.decode(Arrays.copyOfRange(bytes, Integer.BYTES, Integer.BYTES + n));
        String source = new String(bytes, Integer.BYTES + n, bytes.length - Integer.BYTES - n, StandardCharsets.UTF_8);
        if (!source.contains("\nfinal class K")) throw new IllegalArgumentException("program cache entry: the source declares no kernel class");
        return new Entry(program, source);
    }
}
