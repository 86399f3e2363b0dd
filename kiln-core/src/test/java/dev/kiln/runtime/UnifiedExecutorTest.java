package dev.kiln.runtime;

import dev.kiln.ir.Elements;
import dev.kiln.types.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class UnifiedExecutorTest {
    private static final DeviceSpec CPU0 = new DeviceSpec("CPU", 0);
    private static final DeviceSpec CPU1 = new DeviceSpec("CPU", 1);
    private static final DeviceSpec INTERP1 = new DeviceSpec("INTERP", 1);
    private static final Duration SHORT = Duration.ofMillis(100);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private final UnifiedExecutor ex = new UnifiedExecutor(Duration.ofSeconds(30));

    @AfterEach
    void close() { ex.close(); }

    private static Buffer alloc(DeviceSpec d, DType dt, long n) { return DeviceRegistry.get(d).allocate(dt, n); }

    // ---------------------------------------------------------------- timeline

    @Test
    void timelineIsMonotonic() {
        TimelineSignal s = new TimelineSignal(CPU1);
        assertThat(s.value()).isZero();
        s.signal(5);
        s.signal(5);
        assertThat(s.value()).isEqualTo(5);
        assertThatThrownBy(() -> s.signal(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("CPU:1").hasMessageContaining("at 5").hasMessageContaining("signalled 4");
        assertThat(s.value()).isEqualTo(5);
        s.waitFor(3, Duration.ZERO); // already reached: no waiting
        assertThatThrownBy(() -> s.waitFor(1, Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void waiterWakesWhenTheValueIsSignalled() throws Exception {
        TimelineSignal s = new TimelineSignal(CPU0);
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread waiter = Thread.ofPlatform().start(() -> {
            try {
                s.waitFor(10, Duration.ofSeconds(10));
            } catch (Throwable t) {
                error.set(t);
            }
        });
        s.signal(9);
        s.signal(10);
        waiter.join(5_000);
        assertThat(waiter.isAlive()).isFalse();
        assertThat(error.get()).isNull();
    }

    @Test
    void unsatisfiableWaitTimesOutNamingDeviceAndValue() {
        TimelineSignal s = new TimelineSignal(CPU1);
        s.signal(3);
        long start = System.nanoTime();
        assertThatThrownBy(() -> s.waitFor(7, SHORT)).isInstanceOf(TimelineTimeoutException.class)
                .hasMessageContaining("CPU:1").hasMessageContaining("timeline value 7").hasMessageContaining("reached 3")
                .satisfies(e -> {
                    TimelineTimeoutException t = (TimelineTimeoutException) e;
                    assertThat(t.device()).isEqualTo(CPU1);
                    assertThat(t.awaited()).isEqualTo(7);
                    assertThat(t.reached()).isEqualTo(3);
                });
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(SHORT, Duration.ofSeconds(5));
    }

    @Test
    void waitOnBlockedDeviceWorkTimesOut() {
        ex.addDevice(CPU0);
        CountDownLatch release = new CountDownLatch(1);
        long v = ex.executeKernel(CPU0, () -> await(release));
        try {
            assertThatThrownBy(() -> ex.context(CPU0).signal().waitFor(v, SHORT)).isInstanceOf(TimelineTimeoutException.class)
                    .hasMessageContaining("device CPU").hasMessageContaining("timeline value " + v);
        } finally {
            release.countDown();
        }
        ex.context(CPU0).signal().waitFor(v, Duration.ofSeconds(10));
        ex.synchronizeAll();
    }

    @Test
    void interruptedWaitKeepsTheFlagAndSaysWhatItWaitedFor() throws Exception {
        TimelineSignal s = new TimelineSignal(INTERP1);
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicReference<Boolean> flag = new AtomicReference<>();
        Thread waiter = Thread.ofPlatform().start(() -> {
            try {
                s.waitFor(1, Duration.ofMinutes(1));
            } catch (Throwable t) {
                error.set(t);
                flag.set(Thread.currentThread().isInterrupted());
            }
        });
        waiter.interrupt();
        waiter.join(5_000);
        assertThat(error.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("interrupted")
                .hasMessageContaining("INTERP:1").hasMessageContaining("timeline value 1");
        assertThat(flag.get()).isTrue();
    }

    // ---------------------------------------------------------------- contexts and strategies

    @Test
    void devicesHaveTheirOwnNamedDaemonQueues() {
        DeviceContext c0 = ex.addDevice(CPU0);
        DeviceContext c1 = ex.addDevice(CPU1);
        assertThat(ex.addDevice(CPU0)).isSameAs(c0);
        assertThat(c0).isNotSameAs(c1);
        assertThat(ex.context(CPU1)).isSameAs(c1);
        assertThat(ex.devices()).containsExactly(CPU0, CPU1);
        List<String> names = new ArrayList<>();
        List<Boolean> daemon = new ArrayList<>();
        Runnable record = () -> {
            synchronized (names) {
                names.add(Thread.currentThread().getName());
                daemon.add(Thread.currentThread().isDaemon());
            }
        };
        ex.executeKernel(CPU0, record);
        long k = ex.executeKernel(CPU1, record);
        ex.context(CPU1).submit(DeviceContext.Queue.COPY, List.of(new DeviceContext.After(c1, k)), record);
        ex.synchronizeAll();
        assertThat(names).containsExactlyInAnyOrder("kiln-CPU-compute", "kiln-CPU:1-compute", "kiln-CPU:1-copy");
        assertThat(daemon).containsOnly(true);
        assertThat(c1.issued()).isEqualTo(2);
        assertThat(c1.signal().value()).isEqualTo(2);
    }

    @Test
    void syncStrategies() {
        assertThat(UnifiedExecutor.syncStrategy(CPU0, new DeviceSpec("cpu", 0))).isEqualTo(SyncStrategy.LOCAL_COPY);
        assertThat(UnifiedExecutor.syncStrategy(CPU0, CPU1)).isEqualTo(SyncStrategy.PEER_TO_PEER);
        assertThat(UnifiedExecutor.syncStrategy(CPU1, INTERP1)).isEqualTo(SyncStrategy.STAGED_HOST);
        assertThat(UnifiedExecutor.syncStrategy(DeviceSpec.INTERP, INTERP1)).isEqualTo(SyncStrategy.PEER_TO_PEER);
    }

    @Test
    void singleDeviceCheck() {
        Buffer a = alloc(CPU1, DType.F32, 4), b = alloc(CPU1, DType.I32, 2), c = alloc(CPU0, DType.F32, 4);
        assertThat(ex.singleDeviceCheck(List.of(a, b))).contains(CPU1);
        assertThat(ex.singleDeviceCheck(List.of(a, b, c))).isEmpty();
        assertThat(ex.singleDeviceCheck(List.of())).isEmpty();
    }

    @Test
    void globalExecutorIsSharedAndStaysOpen() {
        UnifiedExecutor g = UnifiedExecutor.global();
        assertThat(UnifiedExecutor.global()).isSameAs(g);
        g.close();
        g.addDevice(DeviceSpec.INTERP);
        int[] ran = {0};
        long v = g.executeKernel(DeviceSpec.INTERP, () -> ran[0]++);
        g.context(DeviceSpec.INTERP).signal().waitFor(v, Duration.ofSeconds(10));
        assertThat(ran[0]).isEqualTo(1);
    }

    // ---------------------------------------------------------------- transfers

    @Test
    void everyStrategyCopiesTheData() {
        for (DeviceSpec d : List.of(CPU0, CPU1, INTERP1)) ex.addDevice(d);
        Buffer src = alloc(CPU0, DType.F32, 5);
        for (int i = 0; i < 5; i++) Elements.setDouble(src.segment(), DType.F32, i, i * 1.5);
        Buffer local = alloc(CPU0, DType.F32, 5), peer = alloc(CPU1, DType.F32, 5), staged = alloc(INTERP1, DType.F32, 5);

        long l = ex.executeTransfer(src, local, CPU0, CPU0);
        assertThat(ex.context(CPU0).issued()).isEqualTo(l);
        long p = ex.executeTransfer(local, peer, CPU0, CPU1, new Dependency(CPU0, l));
        assertThat(ex.context(CPU0).issued()).isEqualTo(l); // a peer copy runs on the destination only
        assertThat(ex.context(CPU1).issued()).isEqualTo(p);
        long s = ex.executeTransfer(peer, staged, CPU1, INTERP1, new Dependency(CPU1, p));
        assertThat(ex.context(CPU1).issued()).isEqualTo(p + 1); // the staging copy out, on the source
        assertThat(ex.context(INTERP1).issued()).isEqualTo(s);   // the copy in, on the destination
        ex.context(INTERP1).signal().waitFor(s, Duration.ofSeconds(10));
        for (int i = 0; i < 5; i++) assertThat(Elements.getDouble(staged.segment(), DType.F32, i)).isEqualTo(i * 1.5);
        ex.synchronizeAll();
    }

    /**
     * Three tokens travel round CPU:0 -> CPU:1 (peer) -> INTERP:1 (staged) -> CPU:0 (staged), side by side;
     * every iteration a kernel folds the iteration number into the token, sometimes the token goes
     * through a same-device copy first. The result is an order-sensitive hash, a count and a sum per
     * token: a lost, repeated or reordered step changes them.
     */
    @Test
    void transferStress() {
        List<DeviceSpec> ring = List.of(CPU0, CPU1, INTERP1);
        ring.forEach(ex::addDevice);
        int tokens = 3, iterations = 10_000;
        Buffer[][] main = new Buffer[tokens][ring.size()], scratch = new Buffer[tokens][ring.size()];
        for (int t = 0; t < tokens; t++) {
            for (int d = 0; d < ring.size(); d++) {
                main[t][d] = alloc(ring.get(d), DType.I64, 3);
                scratch[t][d] = alloc(ring.get(d), DType.I64, 3);
            }
        }
        int[] at = new int[tokens];
        Dependency[] last = new Dependency[tokens];
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            int t = i % tokens, d = at[t], next = (d + 1) % ring.size();
            DeviceSpec here = ring.get(d), there = ring.get(next);
            MemorySegment seg = main[t][d].segment();
            long iteration = i;
            Dependency[] after = last[t] == null ? new Dependency[0] : new Dependency[] {last[t]};
            long k = ex.executeKernel(here, () -> {
                seg.setAtIndex(LONG, 0, seg.getAtIndex(LONG, 0) * 31 + iteration);
                seg.setAtIndex(LONG, 1, seg.getAtIndex(LONG, 1) + 1);
                seg.setAtIndex(LONG, 2, seg.getAtIndex(LONG, 2) + iteration);
            }, after);
            Buffer from = main[t][d];
            Dependency ready = new Dependency(here, k);
            if ((i / tokens) % 4 == 3) {
                ready = new Dependency(here, ex.executeTransfer(from, scratch[t][d], here, here, ready));
                from = scratch[t][d];
            }
            last[t] = new Dependency(there, ex.executeTransfer(from, main[t][next], here, there, ready));
            at[t] = next;
        }
        ex.synchronizeAll();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        for (int t = 0; t < tokens; t++) {
            long hash = 0, count = 0, sum = 0;
            for (int i = t; i < iterations; i += tokens) {
                hash = hash * 31 + i;
                count++;
                sum += i;
            }
            MemorySegment out = main[t][at[t]].segment();
            assertThat(new long[] {out.getAtIndex(LONG, 0), out.getAtIndex(LONG, 1), out.getAtIndex(LONG, 2)})
                    .as("token %d after %d ms", t, elapsedMs).containsExactly(hash, count, sum);
        }
        for (DeviceSpec d : ring) {
            DeviceContext c = ex.context(d);
            assertThat(c.signal().value()).as("%s", d).isEqualTo(c.issued());
        }
        assertThat(elapsedMs).as("stress run time").isLessThan(20_000);
    }

    // ---------------------------------------------------------------- failures

    @Test
    void failuresPropagateToDependentsAndAreReportedOnce() {
        ex.addDevice(CPU0);
        ex.addDevice(INTERP1);
        long bad = ex.executeKernel(CPU0, () -> { throw new IllegalStateException("boom"); });
        long later = ex.executeKernel(CPU0, () -> { throw new AssertionError("work after a failure must be skipped"); });
        long dependent = ex.executeKernel(INTERP1, () -> { throw new AssertionError("must not run"); }, new Dependency(CPU0, bad));

        assertThatThrownBy(() -> ex.context(INTERP1).signal().waitFor(dependent, Duration.ofSeconds(10)))
                .isInstanceOf(DeviceExecutionException.class).hasMessageContaining("INTERP:1").hasMessageContaining("boom");
        assertThatThrownBy(() -> ex.context(CPU0).signal().waitFor(later, Duration.ofSeconds(10)))
                .isInstanceOf(DeviceExecutionException.class).hasMessageContaining("device CPU").hasMessageContaining("boom");
        assertThatThrownBy(ex::synchronizeAll).isInstanceOf(DeviceExecutionException.class)
                .hasMessageContaining("synchronizeAll").hasMessageContaining("device CPU: work at timeline value " + bad)
                .hasMessageContaining("boom")
                .satisfies(e -> {
                    assertThat(((DeviceExecutionException) e).device()).isEqualTo(CPU0);
                    assertThat(e.getSuppressed()).hasSize(1);
                    assertThat(e.getSuppressed()[0]).hasMessageContaining("INTERP:1");
                });

        int[] ran = {0};
        long ok = ex.executeKernel(CPU0, () -> ran[0]++, new Dependency(CPU0, later));
        ex.synchronizeAll(); // the failure was reported: the devices work again
        assertThat(ran[0]).isEqualTo(1);
        assertThat(ex.context(CPU0).signal().value()).isEqualTo(ok);
    }

    @Test
    void dependencyThatTimesOutFailsTheWaitingWork() {
        try (UnifiedExecutor quick = new UnifiedExecutor(SHORT)) {
            quick.addDevice(CPU0);
            quick.addDevice(CPU1);
            CountDownLatch release = new CountDownLatch(1);
            long slow = quick.executeKernel(CPU0, () -> await(release));
            quick.executeKernel(CPU1, () -> { }, new Dependency(CPU0, slow));
            try {
                quick.context(CPU1).signal().awaitFinished(1, Duration.ofSeconds(10));
            } finally {
                release.countDown();
            }
            assertThatThrownBy(quick::synchronizeAll).isInstanceOf(DeviceExecutionException.class)
                    .hasMessageContaining("CPU:1").hasMessageContaining("timed out").hasMessageContaining("timeline value " + slow)
                    .hasRootCauseInstanceOf(TimelineTimeoutException.class);
        }
    }

    // ---------------------------------------------------------------- bad input

    @Test
    void unknownAndUnavailableDevices() {
        assertThatThrownBy(() -> ex.addDevice(new DeviceSpec("NOPE", 0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("NOPE").hasMessageContaining("CPU").hasMessageContaining("INTERP");
        assertThatThrownBy(() -> ex.addDevice(new DeviceSpec("OFFLINE", 2))).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("OFFLINE:2").hasMessageContaining("not available").hasMessageContaining(OfflineDeviceProvider.REASON);
        assertThat(ex.devices()).isEmpty();

        ex.addDevice(CPU0);
        assertThatThrownBy(() -> ex.context(CPU1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("CPU:1").hasMessageContaining("addDevice").hasMessageContaining("[CPU]");
        assertThatThrownBy(() -> ex.executeKernel(INTERP1, () -> { })).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("INTERP:1");
        assertThat(ex.context(CPU0).issued()).isZero();
    }

    @Test
    void badTransfersQueueNothing() {
        for (DeviceSpec d : List.of(CPU0, CPU1, INTERP1)) ex.addDevice(d);
        long k = ex.executeKernel(CPU0, () -> { });
        ex.synchronizeAll();
        Buffer f4 = alloc(CPU0, DType.F32, 4), f5 = alloc(INTERP1, DType.F32, 5), i4 = alloc(INTERP1, DType.I32, 4);
        Buffer f4i = alloc(INTERP1, DType.F32, 4), f4c1 = alloc(CPU1, DType.F32, 4);
        Map<DeviceSpec, Long> before = issued();

        assertThatThrownBy(() -> ex.executeTransfer(f4, f5, CPU0, INTERP1, new Dependency(CPU0, k)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("different sizes").hasMessageContaining("4 vs 5");
        assertThatThrownBy(() -> ex.executeTransfer(f4, i4, CPU0, INTERP1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("different dtypes")
                .hasMessageContaining(DType.F32.toString()).hasMessageContaining(DType.I32.toString());
        assertThatThrownBy(() -> ex.executeTransfer(f4, f4c1, CPU0, INTERP1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lives on CPU:1").hasMessageContaining("INTERP:1");
        assertThatThrownBy(() -> ex.executeTransfer(f4, f4i, CPU0, INTERP1, new Dependency(CPU1, 7)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CPU:1").hasMessageContaining("7")
                .hasMessageContaining("never be reached");
        assertThatThrownBy(() -> ex.executeKernel(CPU0, () -> { }, new Dependency(new DeviceSpec("CPU", 9), 0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CPU:9");
        assertThatThrownBy(() -> new Dependency(CPU0, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");

        assertThat(issued()).isEqualTo(before);
        ex.synchronizeAll();
        assertThat(issued()).isEqualTo(before);
    }

    @Test
    void closedExecutorRefusesWork() {
        UnifiedExecutor e = new UnifiedExecutor();
        e.addDevice(CPU0);
        e.close();
        assertThatThrownBy(() -> e.executeKernel(CPU0, () -> { })).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> e.context(CPU0).submit(DeviceContext.Queue.COMPUTE, List.of(), () -> { }))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("CPU").hasMessageContaining("closed");
    }

    private Map<DeviceSpec, Long> issued() {
        Map<DeviceSpec, Long> m = new HashMap<>();
        for (DeviceSpec d : ex.devices()) m.put(d, ex.context(d).issued());
        return m;
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("test latch never released");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
