package dev.kiln.schedule;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.Lowerer;
import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;
import dev.kiln.schedule.MemoryPlan.ByteRange;
import dev.kiln.schedule.MemoryPlan.Interval;
import dev.kiln.schedule.MemoryPlan.Storage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The memory planner packs intermediates tightly, never lets two live intermediates share a byte, and
 * reports every hazard: schedules run from the packed arena, in the schedule's order and in random
 * orders that only respect {@link MemoryPlan#conflicts}, give the INTERP device's values bit for bit.
 */
class MemoryPlannerTest {
    private static final long ALIGN = MemoryPlanner.ALIGNMENT;

    /** Deterministic, irregular test data of a shape, realised. */
    static Tensor data(int seed, int... shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return Tensor.arange(n).cast(DType.F32).mul(0.7 + 0.13 * seed).add(seed).sin().mul(0.3).reshape(shape).realize();
    }

    /** The BUFFER node a realised tensor reads (its node may reshape it). */
    static UOp bufferOf(Tensor t) {
        UOp u = t.uop();
        while (u.op() == Op.RESHAPE) u = u.src(0);
        assertThat(u.op()).isEqualTo(Op.BUFFER);
        return u;
    }

    static String device(Tensor t) { return t.device().spec().toString(); }

    static long bytes(UOp u) { return u.dtype().byteSize(u.shape().numel()); }

    // ------------------------------------------------------------------------------------ deep MLP

    @Test
    void deepMlpArenaHoldsLittleMoreThanThePeakOfLiveActivations() {
        int[] widths = {24, 200, 40, 300, 16, 260, 60, 180, 8};
        Tensor x = data(0, 4, widths[0]);
        for (int i = 0; i < widths.length - 1; i++) {
            x = x.linear(data(i + 1, widths[i + 1], widths[i]), data(i + 20, widths[i + 1])).relu();
        }
        Schedule s = Scheduler.schedule(List.of(x.uop()));
        MemoryPlan plan = MemoryPlanner.plan(s, device(x));

        // independently of the planner: intermediates, their lifetimes, and the peak of live bytes
        List<ScheduleItem> items = s.items();
        Map<UOp, Integer> produced = new IdentityHashMap<>(), lastRead = new IdentityHashMap<>();
        for (int i = 0; i < items.size(); i++) {
            for (UOp in : items.get(i).inputs()) lastRead.put(in, i);
            if (!s.outputs().contains(items.get(i).output())) produced.put(items.get(i).output(), i);
        }
        assertThat(produced).hasSize(widths.length - 2);
        long sumAll = produced.keySet().stream().mapToLong(MemoryPlannerTest::bytes).sum();
        long peak = 0;
        int peakCount = 0;
        for (int t = 0; t < items.size(); t++) {
            long live = 0;
            int count = 0;
            for (var e : produced.entrySet()) {
                if (e.getValue() <= t && t <= lastRead.get(e.getKey())) {
                    live += bytes(e.getKey());
                    count++;
                }
            }
            if (live > peak) {
                peak = live;
                peakCount = count;
            }
        }
        System.out.printf("deep MLP: arena %d bytes, peak of live activations %d, sum of intermediates %d%n",
                plan.arenaSize(), peak, sumAll);
        assertThat(plan.arenaSize()).isGreaterThanOrEqualTo(peak)
                .isLessThanOrEqualTo((long) (1.1 * peak) + ALIGN * peakCount)
                .isLessThan(sumAll);
        assertValidPacking(s, plan);

        // consecutive layers hand activations over: each producer conflicts with its consumer
        for (int i = 0; i + 1 < items.size(); i++) assertThat(plan.conflicts(i, i + 1)).isTrue();
        assertThat(run(s, plan, IntStream.range(0, items.size()).toArray(), List.of(x.uop())).getFirst())
                .usingComparatorWithPrecision(0.0).containsExactly(x.to("INTERP").toDoubleArray()); // the oracle, whatever the default device
    }

    // ------------------------------------------------------------------------------------ random graphs

    static IntStream seeds() { return IntStream.range(0, 40); }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void randomSchedulesArePackedSafelyAndRunInAnyHazardRespectingOrder(int seed) {
        Random rnd = new Random(seed);
        List<Tensor> roots = randomGraph(rnd);
        List<UOp> rootOps = roots.stream().map(Tensor::uop).toList();
        Schedule s = Scheduler.schedule(rootOps);
        MemoryPlan plan = MemoryPlanner.plan(s, device(roots.getFirst()));
        assertValidPacking(s, plan);

        List<double[]> expected = roots.stream().map(t -> t.to("INTERP").toDoubleArray()).toList();
        int n = s.items().size();
        List<int[]> orders = List.of(IntStream.range(0, n).toArray(), hazardRespectingOrder(plan, rnd), hazardRespectingOrder(plan, rnd));
        for (int[] order : orders) {
            List<double[]> got = run(s, plan, order, rootOps);
            for (int r = 0; r < roots.size(); r++) {
                assertThat(got.get(r)).as("root %d, order %s", r, Arrays.toString(order))
                        .usingComparatorWithPrecision(0.0).containsExactly(expected.get(r));
            }
        }
    }

    /** A random graph over [4, 6] tensors mixing fusion, forced materialisation, views, customs and dtypes. */
    static List<Tensor> randomGraph(Random rnd) {
        List<Tensor> pool = new ArrayList<>(List.of(data(1, 4, 6), data(2, 4, 6), data(3, 4, 6)));
        List<Tensor> roots = new ArrayList<>();
        int steps = 6 + rnd.nextInt(12);
        for (int k = 0; k < steps; k++) {
            Tensor a = pool.get(rnd.nextInt(pool.size())), b = pool.get(rnd.nextInt(pool.size()));
            Tensor t = switch (rnd.nextInt(10)) {
                case 0 -> a.sin().mul(0.5);
                case 1 -> a.add(b).relu();
                case 2 -> a.mul(b).maximum(b);
                case 3 -> a.sub(a.max(new int[] {1}, true)); // a broadcast reduce: materialised
                case 4 -> a.contiguous();
                case 5 -> { // a wide intermediate of random size
                    int w = 2 + rnd.nextInt(8);
                    yield a.reshape(4, 6, 1).expand(4, 6, w).add(b.reshape(4, 6, 1)).contiguous().sum(new int[] {2}, false).mul(1.0 / w);
                }
                case 6 -> a.cast(DType.F16).contiguous().cast(DType.F32).add(b); // 48-byte, unaligned-size block
                case 7 -> reverse(a.add(1).contiguous().reshape(24)).reshape(4, 6); // a view inside the arena
                case 8 -> a.reshape(6, 4).mT().add(b.sum(new int[] {0}, true));
                default -> b.sub(a.sum(new int[] {1}, true).expand(4, 6));
            };
            pool.add(t);
            if (rnd.nextInt(5) == 0) roots.add(rnd.nextBoolean() ? t : t.contiguous().reshape(24)); // a view as a graph output
        }
        roots.add(pool.getLast());
        return roots;
    }

    /** A custom op (host code): the flat input reversed. */
    static Tensor reverse(Tensor flat) {
        int n = (int) flat.numel();
        CustomFunction.Body body = (ins, out) -> {
            for (int i = 0; i < n; i++) {
                out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, ins.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, n - 1 - i));
            }
        };
        return Tensor.custom("reverse", DType.F32, new int[] {n}, body, flat);
    }

    /** A random order of the items that keeps every conflicting pair in schedule order. */
    static int[] hazardRespectingOrder(MemoryPlan plan, Random rnd) {
        int n = plan.items().size();
        int[] pending = new int[n];
        int[][] predecessors = plan.predecessors();
        for (int j = 0; j < n; j++) {
            List<Integer> conflicting = new ArrayList<>();
            for (int i = 0; i < j; i++) if (plan.conflicts(i, j)) conflicting.add(i);
            assertThat(predecessors[j]).as("predecessors of item %d", j).containsExactly(conflicting.stream().mapToInt(i -> i).toArray());
            pending[j] = conflicting.size();
        }
        boolean[] done = new boolean[n];
        int[] order = new int[n];
        for (int k = 0; k < n; k++) {
            List<Integer> ready = new ArrayList<>();
            for (int j = 0; j < n; j++) if (!done[j] && pending[j] == 0) ready.add(j);
            int pick = ready.get(rnd.nextInt(ready.size()));
            done[pick] = true;
            order[k] = pick;
            for (int j = pick + 1; j < n; j++) if (plan.conflicts(pick, j)) pending[j]--;
        }
        return order;
    }

    /**
     * Runs the items in {@code order} on storage laid out by the plan (the arenas start full of garbage)
     * and returns the values of {@code roots}.
     */
    static List<double[]> run(Schedule s, MemoryPlan plan, int[] order, List<UOp> roots) {
        Map<Storage, MemorySegment> storage = new HashMap<>();
        for (var e : plan.arenaSizes().entrySet()) {
            MemorySegment arena = MemorySegment.ofArray(new long[(int) (e.getValue() / 8)]);
            arena.fill((byte) 0x7f);
            storage.put(new Storage.Arena(e.getKey()), arena);
        }
        Function<UOp, MemorySegment> seg = u -> {
            ByteRange r = plan.rangeOf(u);
            MemorySegment whole = storage.computeIfAbsent(r.storage(), st -> {
                UOp owner = ((Storage.Owned) st).owner();
                return owner.op() == Op.BUFFER ? ((Buffer) owner.arg()).segment() : MemorySegment.ofArray(new long[(int) ((bytes(owner) + 7) / 8)]);
            });
            return whole.asSlice(r.offset(), r.length());
        };
        for (int i : order) {
            ScheduleItem item = s.items().get(i);
            List<MemorySegment> ins = item.inputs().stream().map(seg).toList();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    List<MemorySegment> params = new ArrayList<>();
                    params.add(seg.apply(k.output()));
                    params.addAll(ins);
                    KernelEvaluator.run(Lowerer.lower(k.output(), k.inputs(), "k" + i), params, Map.of());
                }
                case ScheduleItem.Custom c -> ((CustomFunction) c.output().arg()).body()
                        .apply(ins.stream().map(MemorySegment::asReadOnly).toList(), seg.apply(c.output()));
                case ScheduleItem.View v -> { } // aliases its input: nothing moves
                case ScheduleItem.Join j -> { } // its pieces' kernels wrote it in place
                case ScheduleItem.Copy c -> throw new AssertionError("no copies in these graphs: " + c);
            }
        }
        List<double[]> out = new ArrayList<>();
        for (UOp r : roots) {
            MemorySegment m = seg.apply(r);
            double[] v = new double[(int) r.shape().numel()];
            for (int i = 0; i < v.length; i++) v[i] = Elements.getAsDouble(m, r.dtype(), i);
            out.add(v);
        }
        return out;
    }

    /**
     * The plan's invariants, checked against the schedule: arena blocks are aligned, inside the arena,
     * and disjoint while live; outputs and inputs stay out of the arena; every consumer conflicts with
     * the item that wrote the bytes it reads.
     */
    static void assertValidPacking(Schedule s, MemoryPlan plan) {
        List<ScheduleItem> items = s.items();
        List<UOp> blocks = new ArrayList<>();
        Set<UOp> pieces = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (ScheduleItem item : items) {
            if (item instanceof ScheduleItem.Join j) {
                pieces.addAll(j.inputs());
                ByteRange whole = plan.rangeOf(j.output());
                for (int i = 0; i < j.inputs().size(); i++) { // each piece in its range of the join's bytes
                    ByteRange r = plan.rangeOf(j.inputs().get(i));
                    assertThat(r.storage()).isEqualTo(whole.storage());
                    assertThat(r.offset()).isEqualTo(whole.offset() + j.offsets().get(i));
                    assertThat(r.end()).isLessThanOrEqualTo(whole.end());
                }
            }
        }
        for (ScheduleItem item : items) {
            UOp o = item.output();
            ByteRange r = plan.rangeOf(o);
            if (s.outputs().contains(o)) assertThat(r.storage()).isInstanceOf(Storage.Owned.class);
            if (r.storage() instanceof Storage.Arena a) {
                assertThat(r.offset() % ALIGN).as("offset of %s", o).isZero();
                assertThat(r.end()).isLessThanOrEqualTo(plan.arenaSize(a.device()));
                assertThat(plan.arenaSize(a.device()) % ALIGN).isZero();
                if (!(item instanceof ScheduleItem.View) && !pieces.contains(o)) blocks.add(o);
            }
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER) {
                    assertThat(plan.isExternalInput(in)).isTrue();
                    assertThat(plan.rangeOf(in).storage()).isEqualTo(new Storage.Owned(in));
                }
            }
        }
        for (int x = 0; x < blocks.size(); x++) {
            for (int y = x + 1; y < blocks.size(); y++) {
                UOp a = blocks.get(x), b = blocks.get(y);
                if (plan.interval(a).overlaps(plan.interval(b))) {
                    assertThat(plan.rangeOf(a).overlaps(plan.rangeOf(b))).as("%s %s and %s %s", a, plan.interval(a), b, plan.interval(b)).isFalse();
                }
            }
        }
        // a consumer conflicts with the item that last wrote each of its inputs' bytes
        Map<UOp, List<Integer>> writers = new IdentityHashMap<>();
        for (int j = 0; j < items.size(); j++) {
            ScheduleItem item = items.get(j);
            if (item instanceof ScheduleItem.View || item instanceof ScheduleItem.Join) { // written by its input's (inputs') writers
                List<Integer> w = new ArrayList<>();
                for (UOp in : item.inputs()) w.addAll(writers.getOrDefault(in, List.of()));
                writers.put(item.output(), w);
                for (UOp in : item.inputs()) assertThat(plan.interval(in).last()).isGreaterThanOrEqualTo(j);
                continue;
            }
            for (UOp in : item.inputs()) {
                for (int w : writers.getOrDefault(in, List.of())) assertThat(plan.conflicts(w, j)).as("item %d reads what item %d wrote", j, w).isTrue();
                assertThat(plan.interval(in).last()).isGreaterThanOrEqualTo(j);
            }
            writers.put(item.output(), List.of(j));
        }
    }

    // ------------------------------------------------------------------------------------ views

    @Test
    void aReshapeOfAnIntermediateSharesItsOffset() {
        Tensor x = data(1, 4, 6);
        Tensor parent = x.exp().contiguous();
        Tensor out = reverse(parent.reshape(24)).add(1);
        Schedule s = Scheduler.schedule(List.of(out.uop()));
        MemoryPlan plan = MemoryPlanner.plan(s, device(x));
        ScheduleItem.View view = s.items().stream().filter(i -> i instanceof ScheduleItem.View).map(ScheduleItem.View.class::cast)
                .findFirst().orElseThrow();
        UOp p = view.inputs().getFirst(), v = view.output();
        assertThat(p).isSameAs(parent.uop());
        assertThat(plan.inArena(v)).isTrue();
        assertThat(plan.offsetOf(v)).isEqualTo(plan.offsetOf(p));
        // the parent lives until the custom op reads its view
        int customAt = indexOf(s, ScheduleItem.Custom.class);
        assertThat(plan.interval(p)).isEqualTo(new Interval(indexOf(s, p), customAt));
        assertThat(plan.interval(v)).isEqualTo(new Interval(indexOf(s, v), customAt));
        assertValidPacking(s, plan);
        assertThat(run(s, plan, IntStream.range(0, s.items().size()).toArray(), List.of(out.uop())).getFirst())
                .usingComparatorWithPrecision(0.0).containsExactly(out.to("INTERP").toDoubleArray());
    }

    @Test
    void aGraphOutputThatViewsAnIntermediateTakesItOutOfTheArena() {
        Tensor x = data(1, 4, 6);
        Tensor parent = x.exp().contiguous();
        Tensor out = parent.reshape(24);
        Schedule s = Scheduler.schedule(List.of(out.uop()));
        MemoryPlan plan = MemoryPlanner.plan(s, device(x));
        assertThat(s.items()).hasSize(2).last().isInstanceOf(ScheduleItem.View.class);
        assertThat(plan.rangeOf(parent.uop()).storage()).isEqualTo(new Storage.Owned(parent.uop()));
        assertThat(plan.rangeOf(out.uop()).storage()).isEqualTo(new Storage.Owned(parent.uop()));
        assertThat(plan.arenaSize()).isZero();
        assertThat(plan.isGraphOutput(out.uop())).isTrue();
        assertThat(plan.isGraphOutput(parent.uop())).isFalse();
        assertThatThrownBy(() -> plan.offsetOf(out.uop())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owns its storage");
    }

    // ------------------------------------------------------------------------------------ hazards

    @Test
    void independentBranchesConflictOnlyWhereTheyShareBytes() {
        Tensor a = data(1, 8, 8), b = data(2, 8, 8);
        // outputs only: the branches touch disjoint storage
        Tensor ra = a.exp().sum(), rb = b.sin().sum();
        Schedule s = Scheduler.schedule(List.of(ra.uop(), rb.uop()));
        MemoryPlan plan = MemoryPlanner.plan(s, device(a));
        assertThat(s.items()).hasSize(2);
        assertThat(plan.arenaSize()).isZero();
        assertThat(plan.conflicts(0, 1)).isFalse();
        assertThat(plan.isExternalInput(bufferOf(a))).isTrue();
        assertThat(plan.isGraphOutput(ra.uop())).isTrue();

        // with an intermediate each: the second branch reuses the first one's bytes, so they conflict
        Tensor ca = a.exp().contiguous().sum(), cb = b.sin().contiguous().sum();
        Schedule s2 = Scheduler.schedule(List.of(ca.uop(), cb.uop()));
        MemoryPlan plan2 = MemoryPlanner.plan(s2, device(a));
        assertThat(s2.items()).hasSize(4); // branch a: items 0, 1; branch b: items 2, 3
        assertThat(plan2.arenaSize()).isEqualTo(MemoryPlanner.align(8 * 8 * 4));
        assertThat(plan2.offsetOf(s2.items().get(0).output())).isEqualTo(plan2.offsetOf(s2.items().get(2).output()));
        for (int i : new int[] {0, 1}) {
            for (int j : new int[] {2, 3}) {
                boolean shared = plan2.writes(i).stream().anyMatch(w -> overlapsAny(w, plan2.reads(j)) || overlapsAny(w, plan2.writes(j)))
                        || plan2.writes(j).stream().anyMatch(w -> overlapsAny(w, plan2.reads(i)));
                assertThat(plan2.conflicts(i, j)).as("items %d, %d", i, j).isEqualTo(shared).isEqualTo(plan2.conflicts(j, i));
            }
        }
        assertThat(plan2.conflicts(0, 2)).isTrue(); // both write the shared bytes
        assertThat(plan2.conflicts(1, 2)).isTrue(); // 2 overwrites what 1 reads
        assertThat(plan2.conflicts(1, 3)).isFalse();
        assertThat(plan2.conflicts(0, 1)).isTrue(); // producer and consumer
    }

    private static boolean overlapsAny(ByteRange r, List<ByteRange> rs) { return rs.stream().anyMatch(r::overlaps); }

    @Test
    void anAssignWritesIntoItsTargetAfterEarlierReaders() {
        Tensor x = data(1, 4, 6);
        Tensor before = x.exp().sum();
        Tensor assign = x.assign(x.add(1));
        Schedule s = Scheduler.schedule(List.of(before.uop(), assign.uop()));
        MemoryPlan plan = MemoryPlanner.plan(s, device(x));
        int reader = indexOf(s, before.uop()), writer = indexOf(s, assign.uop());
        UOp target = bufferOf(x);
        assertThat(plan.rangeOf(assign.uop()).storage()).isEqualTo(new Storage.Owned(target));
        assertThat(plan.writes(writer)).containsExactly(plan.rangeOf(target));
        assertThat(plan.reads(reader)).containsExactly(plan.rangeOf(target));
        assertThat(plan.conflicts(reader, writer)).isTrue();
    }

    // ------------------------------------------------------------------------------------ devices

    @Test
    void aCopyPlacesItsResultInTheTargetDevicesArena() {
        Tensor x = data(1, 4, 6);
        UOp onHome = x.exp().contiguous().uop();
        UOp copied = UOp.of(Op.COPY, DType.F32, "CLANG", onHome);
        UOp there = UOp.of(Op.CONTIGUOUS, DType.F32, null, copied.add(copied));
        UOp root = there.neg();
        Schedule s = Scheduler.schedule(List.of(root));
        MemoryPlan plan = MemoryPlanner.plan(s, device(x));
        assertThat(s.items()).extracting(i -> i.getClass().getSimpleName()).containsExactly("Kernel", "Copy", "Kernel", "Kernel");
        long block = MemoryPlanner.align(24 * 4);
        assertThat(plan.rangeOf(onHome).storage()).isEqualTo(new Storage.Arena(device(x)));
        assertThat(plan.rangeOf(copied).storage()).isEqualTo(new Storage.Arena("CLANG"));
        assertThat(plan.rangeOf(there).storage()).isEqualTo(new Storage.Arena("CLANG"));
        assertThat(plan.arenaSize()).isEqualTo(block);
        assertThat(plan.arenaSize("CLANG")).isEqualTo(2 * block); // the copy is still read while `there` is written
        assertThat(plan.conflicts(0, 1)).isTrue();
        assertThat(plan.conflicts(0, 2)).isFalse(); // different arenas
        assertValidPacking(s, plan);
    }

    private static int indexOf(Schedule s, UOp output) {
        for (int i = 0; i < s.items().size(); i++) if (s.items().get(i).output() == output) return i;
        throw new AssertionError(output + " is not produced");
    }

    private static int indexOf(Schedule s, Class<? extends ScheduleItem> kind) {
        for (int i = 0; i < s.items().size(); i++) if (kind.isInstance(s.items().get(i))) return i;
        throw new AssertionError("no " + kind.getSimpleName());
    }
}
