package dev.kiln.compile;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.ProgramCodec;
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
 * The program layer of a {@link KernelPipeline}'s cache: per kernel structure, the optimised program and
 * its rendered source, so that preparing a kernel met before skips lowering, optimisation and rendering —
 * within a process (the same layer in twelve blocks) and, on disk, across processes (a server restarting
 * with a model it has prepared before). Binaries stay in the pipeline's other layer, keyed by source.
 * It subsumes per-process memos of lowered, optimised and rendered programs: a structure is lowered,
 * optimised and rendered once per process at most, and then not even once in the next process.
 *
 * <p><b>Key.</b> A kernel's structure is its graph {@linkplain ProgramCodec#encodeKernel encoded} with its
 * inputs as placeholders of their position, dtype and shape: every op, dtype, argument (shapes, axes,
 * constants' bits, symbolic variables) and edge. Together with the identity — the backend's
 * {@linkplain KernelBackend#programIdentity program identity} and the {@link CodeFingerprint} of Kiln's
 * classes, since the program is what Kiln's own lowering, heuristics and renderer make of the kernel — it
 * decides the entry. A different Kiln build never reads another's entries.
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
     * @param kernel  its source
     */
    record Entry(KernelProgram program, RenderedKernel kernel) {}

    private final KernelCache<Entry> cache;
    private final CompilerIdentity identity;

    /** A cache over {@code cache} whose entries are made by a pipeline with {@code identity}. */
    ProgramCache(KernelCache<Entry> cache, CompilerIdentity identity) {
        this.cache = cache;
        this.identity = identity;
    }

    /**
     * The process's cache for a backend with {@code programIdentity}: on disk when the cache location is on
     * and Kiln's classes have a fingerprint, else in memory.
     */
    static ProgramCache create(CompilerIdentity programIdentity) {
        Optional<String> code = KernelCache.cacheRoot().isPresent() ? CodeFingerprint.of(ProgramCache.class) : Optional.empty();
        KernelCache<Entry> cache = code.isPresent()
                ? KernelCache.inCacheFolder("programs", KernelCache.Loader.concurrent(ProgramCache::decode))
                : KernelCache.inMemory(ProgramCache::decode);
        return new ProgramCache(cache, programIdentity.with("kiln.code", code.orElse("this process")));
    }

    /**
     * The entries of {@code kernels}, in order. Structures found in neither memory nor disk are made by
     * {@code build} (given one of their kernels), once each, then published. {@code build} may be called from several
     * threads at once.
     */
    List<Entry> get(List<ScheduleItem.Kernel> kernels, Function<ScheduleItem.Kernel, Entry> build) {
        List<KernelCache.Request<String>> requests = new ArrayList<>();
        Map<String, ScheduleItem.Kernel> byKey = new HashMap<>();
        for (ScheduleItem.Kernel kernel : kernels) {
            String key = key(kernel);
            byKey.putIfAbsent(key, kernel);
            requests.add(new KernelCache.Request<>(key, key, identity));
        }
        // misses built side by side (lowering, optimising and rendering read only the kernel): a cold ResNet-50 spent
        // 0.7 s building about 100 structures one after another
        Map<String, Entry> found = cache.getOrCompileAll(requests, misses -> Concurrently.map(misses, m -> encode(build.apply(byKey.get(m.key())))));
        List<Entry> out = new ArrayList<>();
        for (var r : requests) out.add(found.get(r.key()));
        return out;
    }

    /** The cache key of a kernel: its structure's {@linkplain ProgramCodec#encodeKernel encoding}, one char per byte. */
    static String key(ScheduleItem.Kernel kernel) {
        return new String(ProgramCodec.encodeKernel(kernel.output(), kernel.inputs()), StandardCharsets.ISO_8859_1);
    }

    KernelCache.Stats stats() { return cache.stats(); }

    CompilerIdentity identity() { return identity; }

    /**
     * The program's encoding, the encoding of the program the source renders ({@link RenderedKernel#rendered}; no bytes
     * when that is the program itself), the entry point's name, then the source, each string in UTF-8.
     */
    static byte[] encode(Entry e) {
        byte[] program = ProgramCodec.encode(e.program());
        byte[] rendered = e.kernel().rendered().map(ProgramCodec::encode).orElse(new byte[0]);
        byte[] entryPoint = e.kernel().entryPoint().getBytes(StandardCharsets.UTF_8);
        byte[] source = e.kernel().source().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(3 * Integer.BYTES + program.length + rendered.length + entryPoint.length + source.length)
                .putInt(program.length).put(program).putInt(rendered.length).put(rendered)
                .putInt(entryPoint.length).put(entryPoint).put(source).array();
    }

    /**
     * The entry {@link #encode} wrote.
     *
     * @throws IllegalArgumentException if the bytes are not a valid entry
     */
    static Entry decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        KernelProgram program = ProgramCodec.decode(part(b, "program"));
        byte[] rendered = part(b, "rendered program");
        String entryPoint = new String(part(b, "entry point"), StandardCharsets.UTF_8);
        String source = new String(bytes, b.position(), b.remaining(), StandardCharsets.UTF_8);
        if (entryPoint.isEmpty()) throw new IllegalArgumentException("program cache entry: no entry point");
        return new Entry(program, new RenderedKernel(entryPoint, source,
                rendered.length == 0 ? Optional.empty() : Optional.of(ProgramCodec.decode(rendered))));
    }

    /** The next length-prefixed part of an entry. */
    private static byte[] part(ByteBuffer b, String what) {
        if (b.remaining() < Integer.BYTES) throw new IllegalArgumentException("program cache entry: no " + what);
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("program cache entry: " + what + " of " + n + " bytes with " + b.remaining() + " left");
        }
        byte[] out = Arrays.copyOfRange(b.array(), b.position(), b.position() + n);
        b.position(b.position() + n);
        return out;
    }
}
