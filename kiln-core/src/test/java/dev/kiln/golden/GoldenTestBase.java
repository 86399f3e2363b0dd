package dev.kiln.golden;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs every case of one golden group on every device of {@link TestDevices} (skipping, with the reason,
 * devices this machine lacks) and compares shape, dtype and values with the independently computed
 * expectation. Subclasses name the group and map each op of the group to Tensor API calls.
 */
abstract class GoldenTestBase {
    /** f32 tolerances of the issue: rtol 1e-4, atol 1e-5. */
    static final double RTOL = 1e-4, ATOL = 1e-5;

    abstract String group();

    /** Op name to Tensor API call. */
    abstract Map<String, GoldenOp> ops();

    @TestFactory
    Stream<DynamicTest> golden() {
        List<GoldenCase> cases = GoldenCase.load(group());
        Map<String, GoldenOp> ops = ops();
        List<DynamicTest> tests = new ArrayList<>();
        for (String device : TestDevices.ALL) {
            if (TestDevices.PRECOMPILED.contains(device)) {
                tests.add(DynamicTest.dynamicTest(device + " compiles every case's kernels in batches", () -> {
                    TestDevices.assumeAvailable(device);
                    precompile(device, cases, ops);
                }));
            }
            for (GoldenCase c : cases) {
                tests.add(DynamicTest.dynamicTest(device + " " + c.name(), () -> {
                    TestDevices.assumeAvailable(device);
                    run(c, ops, device);
                }));
            }
        }
        return tests.stream();
    }

    /** Every op of the group has cases and every case's op is mapped, so no case is silently skipped. */
    @Test
    void catalogCoversCases() {
        Set<String> caseOps = new TreeSet<>();
        GoldenCase.load(group()).forEach(c -> caseOps.add(c.op()));
        assertThat(ops().keySet()).as("ops with a Tensor mapping in " + group()).containsExactlyInAnyOrderElementsOf(caseOps);
    }

    /**
     * Compiles the kernels of every case in a few large batches, so that the cases find them compiled: a
     * device that runs the system compiler pays a process per batch, far more than per kernel. Cases that
     * cannot be built here fail in their own tests.
     */
    static void precompile(String device, List<GoldenCase> cases, Map<String, GoldenOp> ops) {
        Device d = DeviceRegistry.get(device);
        List<KernelProgram> programs = new ArrayList<>();
        for (GoldenCase c : cases) {
            try {
                List<Tensor> inputs = new ArrayList<>();
                for (GoldenArray a : c.inputs()) inputs.add(a.toTensor().to(device));
                List<UOp> roots = ops.get(c.op()).apply(inputs, c.args()).stream().map(Tensor::uop).toList();
                for (ScheduleItem item : Scheduler.schedule(roots).items()) {
                    if (item instanceof ScheduleItem.Kernel k) programs.add(d.optimize(KernelLowering.lower(k.output(), k.inputs(), "k" + programs.size())));
                }
            } catch (RuntimeException e) {
                // reported by the case's own test
            }
        }
        int batch = 64;
        IntStream.range(0, (programs.size() + batch - 1) / batch).parallel()
                .forEach(i -> d.compile(programs.subList(i * batch, Math.min(programs.size(), (i + 1) * batch))));
    }

    static void run(GoldenCase c, Map<String, GoldenOp> ops, String device) {
        GoldenOp op = ops.get(c.op());
        assertThat(op).as("mapping for op " + c.op()).isNotNull();
        List<Tensor> inputs = new ArrayList<>();
        for (GoldenArray a : c.inputs()) inputs.add(a.toTensor().to(device));
        List<Tensor> outs = op.apply(inputs, c.args());
        assertThat(outs).as(c + ": number of outputs").hasSize(c.outputs().size());
        for (int i = 0; i < outs.size(); i++) assertMatches(c, i, outs.get(i), c.outputs().get(i));
    }

    static void assertMatches(GoldenCase c, int index, Tensor actual, GoldenArray expected) {
        String what = c + " output " + index;
        assertThat(actual.dims()).as(what + " shape").containsExactly(expected.shape());
        assertThat(actual.dtype()).as(what + " dtype").isEqualTo(expected.dtype());
        if (expected.dtype().isFloat()) {
            double rtol = c.rtol() != null ? c.rtol() : defaultRtol(expected.dtype());
            double atol = c.atol() != null ? c.atol() : defaultAtol(expected.dtype());
            double[] got = actual.toDoubleArray();
            for (int k = 0; k < got.length; k++) {
                double e = expected.floats()[k], g = got[k];
                boolean ok = Double.isNaN(e) ? Double.isNaN(g)
                        : Double.isInfinite(e) ? e == g
                        : Math.abs(g - e) <= atol + rtol * Math.abs(e);
                if (!ok) {
                    throw new AssertionError(what + " element " + k + ": expected " + e + ", got " + g + " (rtol " + rtol + ", atol " + atol + ")");
                }
            }
        } else {
            assertThat(actual.toLongArray()).as(what + " values").containsExactly(expected.ints());
        }
    }

    static double defaultRtol(DType dt) {
        return switch (dt) {
            case F16 -> 1e-3;
            case BF16 -> 1e-2;
            default -> RTOL;
        };
    }

    static double defaultAtol(DType dt) {
        return switch (dt) {
            case F16 -> 1e-3;
            case BF16 -> 1e-2;
            default -> ATOL;
        };
    }

    /** Distinct ops of a group (for the coverage count). */
    static Set<String> opsOf(String group) {
        Set<String> s = new HashSet<>();
        GoldenCase.load(group).forEach(c -> s.add(c.op()));
        return s;
    }
}
