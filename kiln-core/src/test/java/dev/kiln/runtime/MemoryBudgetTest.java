package dev.kiln.runtime;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 13, allocations bounded before they happen: the {@link MemoryBudget}'s setting and default, and every way
 * to ask for host memory (a plan, a buffer, a tensor) refused over it with a {@link MemoryBudgetException} that
 * gives both figures and the setting, before anything is allocated: never an {@link OutOfMemoryError}.
 */
class MemoryBudgetTest {
    private static final long MIB = 1L << 20;
    private String saved;

    @BeforeEach
    void save() { saved = System.getProperty(MemoryBudget.PROPERTY); }

    @AfterEach
    void restore() {
        if (saved == null) System.clearProperty(MemoryBudget.PROPERTY);
        else System.setProperty(MemoryBudget.PROPERTY, saved);
    }

    private static void budget(String value) { System.setProperty(MemoryBudget.PROPERTY, value); }

    // ---- the setting -------------------------------------------------------------------------------------------

    @Test
    void sizesAreBytesOrBinaryUnits() {
        assertThat(MemoryBudget.parse("1024", "x")).isEqualTo(1024);
        assertThat(MemoryBudget.parse("64m", "x")).isEqualTo(64 * MIB);
        assertThat(MemoryBudget.parse(" 8G ", "x")).isEqualTo(8L << 30);
        assertThat(MemoryBudget.parse("2GB", "x")).isEqualTo(2L << 30);
        assertThat(MemoryBudget.parse("16k", "x")).isEqualTo(16L << 10);
        assertThat(MemoryBudget.parse("1t", "x")).isEqualTo(1L << 40);
    }

    @Test
    void aBadSettingIsAClearErrorNamingIt() {
        for (String bad : new String[] {"lots", "-1", "0", "12q", "g", "99999999999t", "1.5g"}) {
            assertThatThrownBy(() -> MemoryBudget.parse(bad, "-Dkiln.memory.budget"))
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("-Dkiln.memory.budget='" + bad + "'").hasMessageContaining("is not a memory size");
        }
        budget("plenty");
        assertThatThrownBy(() -> MemoryBudget.check(1, "a buffer")).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("-Dkiln.memory.budget='plenty' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)");
        assertThatThrownBy(() -> Tensor.zeros(4).realize()).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("kiln.memory.budget='plenty'");
    }

    @Test
    void thePropertyIsReadOnEveryCheck() {
        budget("64m");
        assertThat(MemoryBudget.bytes()).isEqualTo(64 * MIB);
        budget("1g");
        assertThat(MemoryBudget.bytes()).isEqualTo(1L << 30);
    }

    @Test
    void theDefaultIsWhatTheMachineAndTheJvmCanGive() {
        System.clearProperty(MemoryBudget.PROPERTY);
        long machine = MemoryBudget.machineBytes();
        assertThat(machine).isPositive();
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        assertThat(machine).isLessThanOrEqualTo(os.getTotalMemorySize());
        // the test JVM sets no -XX:MaxDirectMemorySize: its off-heap limit is then the maximum heap
        assertThat(machine).isLessThanOrEqualTo(Runtime.getRuntime().maxMemory());
        if (System.getenv(MemoryBudget.ENV) == null) assertThat(MemoryBudget.bytes()).isEqualTo(machine);
    }

    // ---- refusals ----------------------------------------------------------------------------------------------

    @Test
    void aPlanOverTheBudgetIsRefusedBeforeAllocatingWithBothFigures() {
        budget("64m");
        // two outputs of 40 MB: each fits, the plan does not
        Tensor a = Tensor.zeros(10_000_000).add(1), b = Tensor.zeros(10_000_000).add(2);
        long live = MemoryStats.liveBytes();
        assertThatThrownBy(() -> Tensor.prepare(a, b)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageStartingWith("execution plan on CPU")
                .hasMessageContaining("needs 80000000 bytes (76.3 MiB), over the memory budget of 67108864 bytes (64 MiB)")
                .hasMessageContaining("set by -Dkiln.memory.budget=64m")
                .satisfies(e -> {
                    MemoryBudgetException m = (MemoryBudgetException) e;
                    assertThat(m.neededBytes()).isEqualTo(80_000_000L);
                    assertThat(m.budgetBytes()).isEqualTo(64 * MIB);
                    // refused by PlanBuilder before its kernels were compiled, not by the plan it would have made
                    assertThat(java.util.Arrays.stream(e.getStackTrace()).map(f -> f.getClassName() + "." + f.getMethodName()))
                            .contains(PlanBuilder.class.getName() + ".build").doesNotContain(ExecutionPlan.class.getName() + ".<init>");
                });
        assertThat(MemoryStats.liveBytes()).isEqualTo(live); // nothing was allocated
        budget("128m");
        try (ExecutionPlan p = Tensor.prepare(a, b)) {
            p.execute();
            assertThat(p.outputBuffer(1).getDouble(9_999_999)).isEqualTo(2.0);
        }
    }

    @Test
    void aPlanKnowsItsBytesBeforeAllocating() {
        Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
        try (ExecutionPlan p = x.exp().sum(1).mul(x.sum(0)).prepare()) {
            assertThat(p.plannedBytes()).isPositive().isEqualTo(p.allocatedBytes()); // every byte it allocated was counted
            assertThat(p.plannedBytes()).isGreaterThanOrEqualTo(p.arenaBytes() + 2 * 4);
        }
    }

    @Test
    void aReplicaIsCheckedToo() {
        budget("64m");
        try (ExecutionPlan p = Tensor.zeros(10_000_000).add(1).prepare()) {
            budget("32m");
            assertThatThrownBy(() -> p.replicate(java.util.Map.of())).isInstanceOf(MemoryBudgetException.class)
                    .hasMessageContaining("needs 40000000 bytes").hasMessageContaining("33554432 bytes (32 MiB)");
        }
    }

    @Test
    void aBufferOverTheBudgetIsRefused() {
        budget("64m");
        assertThatThrownBy(() -> Buffer.allocateOffHeap("CPU", DType.F32, 20_000_000)).isInstanceOf(MemoryBudgetException.class)
                .hasMessage("buffer of 20000000 x f32 on CPU needs 80000000 bytes (76.3 MiB), over the memory budget of 67108864 bytes (64 MiB) (set by -Dkiln.memory.budget=64m)");
        assertThatThrownBy(() -> DeviceRegistry.get("CPU").allocate(DType.F64, 10_000_000)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 80000000 bytes");
        assertThatThrownBy(() -> DeviceRegistry.get("INTERP").allocate(DType.F32, 20_000_000)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("on INTERP needs 80000000 bytes");
        assertThat(Buffer.allocateOffHeap("CPU", DType.F32, 1_000_000).count()).isEqualTo(1_000_000); // under it: allocated
    }

    @Test
    void tensorsOverTheBudgetAreRefusedOnEveryHostDevice() {
        budget("64m");
        assertThatThrownBy(() -> Tensor.zeros(5000, 5000).realize()).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 100000000 bytes").hasMessageContaining("kiln.memory.budget");
        assertThatThrownBy(() -> Tensor.full(7, DType.I64, 3000, 3000).add(1).realize()).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 72000000 bytes");
        assertThatThrownBy(() -> Tensor.zeros(5000, 5000).to("INTERP").realize()).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("kiln.memory.budget");
        assertThatThrownBy(() -> Tensor.of(new float[17_000_000])).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 68000000 bytes");
        assertThatThrownBy(() -> Tensor.arange(0.0, 1e7, 1.0)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageStartingWith("arange of 10000000 x f32 needs 120000000 bytes");
        assertThatThrownBy(() -> Tensor.arange(0.0, 1e12, 1.0)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("are too many");
    }

    @Test
    void aHugeRequestFailsUnderTheDefaultBudgetToo() {
        System.clearProperty(MemoryBudget.PROPERTY);
        long live = MemoryStats.liveBytes();
        // 2^40 bytes: more than any machine this runs on can give
        assertThatThrownBy(() -> Tensor.zeros(1 << 20, 1 << 18).realize()).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 1099511627776 bytes (1 TiB)").hasMessageContaining("what this machine can give")
                .hasMessageContaining("-Dkiln.memory.budget").hasMessageContaining("KILN_MEMORY_BUDGET");
        assertThatThrownBy(() -> Tensor.zeros(1 << 20, 1 << 18).add(1).to("INTERP").realize()).isInstanceOf(MemoryBudgetException.class);
        assertThatThrownBy(() -> Buffer.allocateOffHeap("CPU", DType.U8, 1L << 40)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("needs 1099511627776 bytes");
        assertThatThrownBy(() -> Buffer.allocateHeap("INTERP", DType.U8, 1L << 40)).isInstanceOf(MemoryBudgetException.class);
        assertThat(MemoryStats.liveBytes()).isEqualTo(live);
    }

    @Test
    void aRefusalByTheJvmItselfIsTypedToo() {
        // a budget above what the JVM will reserve: the JVM's own refusal becomes the same typed error
        budget("1t");
        assertThatThrownBy(() -> Buffer.allocateOffHeap("CPU", DType.U8, 1L << 39)).isInstanceOf(MemoryBudgetException.class)
                .hasMessageContaining("the JVM could not reserve it").hasNoCause()
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().isInstanceOf(OutOfMemoryError.class));
    }
}
