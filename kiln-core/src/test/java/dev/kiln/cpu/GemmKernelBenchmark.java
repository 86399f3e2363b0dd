package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.Contraction.Var;
import dev.kiln.runtime.WorkerPool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Prints GFLOP/s of {@link GemmKernel} (median of 5 timed runs): square matmuls and a 3x3 convolution with 64
 * output channels (M=64, K=576, N=56*56). Run by hand (not a test): it takes seconds and wants a quiet machine.
 * Arguments: the cases, among {@code 1024 2048 conv conv2 linear} (any n runs an n^3 matmul); all three by default. One
 * thread: {@code -XX:ActiveProcessorCount=1} (the worker pool sizes itself from it). Run from kiln-core:
 * {@code java --add-modules jdk.incubator.vector -cp target/classes:target/test-classes:<dependencies> dev.kiln.cpu.GemmKernelBenchmark}.
 */
final class GemmKernelBenchmark {
    public static void main(String[] args) {
        List<String> cases = args.length == 0 ? List.of("1024", "2048", "conv") : List.of(args);
        WorkerPool.warmUp();
        for (String c : cases) {
            switch (c) {
                case "conv" -> bench("conv 3x3 64x64x56x56", conv(), 2L * 64 * 576 * 3136);
                case "conv2" -> bench("conv 3x3/2 64->128 56x56", GemmKernelTest.conv(1, 64, 128, 56, 3, 2, 1), 2L * 128 * 576 * 784);
                case "linear" -> bench("x.W^T 1024^3", linear(1024), 2L * 1024 * 1024 * 1024);
                default -> {
                    int n = Integer.parseInt(c);
                    bench("matmul " + n + "^3", matmul(n), 2L * n * n * n);
                }
            }
        }
    }

    static Contraction matmul(int n) {
        return new Contraction(List.of(new Var("m", Role.M, n, -1), new Var("n", Role.N, n, -1), new Var("k", Role.K, n, -1)),
                new Operand(1, 0, new long[] {n, 0, 1}, List.of()),
                new Operand(2, 0, new long[] {0, 1, n}, List.of()),
                new Operand(0, 0, new long[] {n, 1, 0}, List.of()));
    }

    /** A linear layer: C = x W^T, W stored [out][in] (B's columns are rows of W). */
    static Contraction linear(int n) {
        return new Contraction(List.of(new Var("m", Role.M, n, -1), new Var("n", Role.N, n, -1), new Var("k", Role.K, n, -1)),
                new Operand(1, 0, new long[] {n, 0, 1}, List.of()),
                new Operand(2, 0, new long[] {0, n, 1}, List.of()),
                new Operand(0, 0, new long[] {n, 1, 0}, List.of()));
    }

    /** NCHW 3x3 stride 1 pad 1, 64 -> 64 channels on 56x56: vars co | oh ow | ci kh kw. */
    static Contraction conv() {
        int c = 64, h = 56;
        List<Var> vars = List.of(new Var("co", Role.M, c, -1), new Var("oh", Role.N, h, -1), new Var("ow", Role.N, h, -1),
                new Var("ci", Role.K, c, -1), new Var("kh", Role.K, 3, -1), new Var("kw", Role.K, 3, -1));
        // weights [co][ci][kh][kw]
        Operand w = new Operand(1, 0, new long[] {c * 9, 0, 0, 9, 3, 1}, List.of());
        // input [ci][ih][iw], ih = oh + kh - 1
        Operand x = new Operand(2, -h - 1, new long[] {0, h, 1, h * h, h, 1}, List.of(
                new Gate(new long[] {0, 1, 0, 0, 1, 0}, 1, h + 1), new Gate(new long[] {0, 0, 1, 0, 0, 1}, 1, h + 1)));
        Operand out = new Operand(0, 0, new long[] {h * h, h, 1, 0, 0, 0}, List.of());
        return new Contraction(vars, w, x, out);
    }

    static void bench(String name, Contraction c, long flops) {
        GemmKernel k = new GemmKernel(c);
        Arena arena = Arena.ofAuto();
        MemorySegment[] bufs = new MemorySegment[3];
        Random r = new Random(1);
        for (int i = 0; i < 3; i++) {
            long n = 64L * 64 * 60 * 60; // every benchmark operand fits
            bufs[i] = arena.allocate(4 * n, 64);
            for (long j = 0; j < n; j++) bufs[i].setAtIndex(ValueLayout.JAVA_FLOAT, j, r.nextFloat() - 0.5f);
        }
        long t0 = System.nanoTime();
        int warm = 0;
        while (System.nanoTime() - t0 < 2_000_000_000L || warm < 3) {
            k.run(bufs, new long[0]);
            warm++;
        }
        int reps = Math.max(1, warm / 4);
        double[] g = new double[5], perCpu = new double[5];
        for (int i = 0; i < 5; i++) {
            long s = System.nanoTime(), cpu = cpuNanos();
            for (int j = 0; j < reps; j++) k.run(bufs, new long[0]);
            g[i] = (double) flops * reps / (System.nanoTime() - s);
            perCpu[i] = (double) flops * reps / (cpuNanos() - cpu);
        }
        Arrays.sort(g);
        Arrays.sort(perCpu);
        // on a shared machine wall time undercounts; GFLOP per CPU-second shows what each busy core did
        System.out.printf("%-22s median %6.1f GFLOP/s (min %6.1f, max %6.1f) on %d workers; %6.1f GFLOP per CPU-second%n",
                name, g[2], g[0], g[4], WorkerPool.size(), perCpu[2]);
    }

    /** CPU time of this process (user + system, from /proc: clock ticks of 10 ms). */
    private static long cpuNanos() {
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
