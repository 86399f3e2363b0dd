package dev.kiln.cuda;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.KernelProgram;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A contraction ({@link Contraction}: matmul in any layout, batched matmul, convolution as an implicit im2col)
 * rendered as a shared-memory tiled GEMM kernel for the GPU, specialised to the contraction's shapes, strides and
 * gates, which become constants in the source.
 *
 * <p>Each block of {@value #THREADS} threads computes a {@value #TILE}×{@value #TILE} tile of C for one batch
 * index ({@code blockIdx.z}); each thread 4×4 elements of it, rows and columns 16 apart so that neighbouring
 * threads read neighbouring shared-memory words and store neighbouring columns. Per step of {@value #DEPTH} along
 * K, the block stages a {@value #TILE}×{@value #DEPTH} tile of A and a {@value #DEPTH}×{@value #TILE} tile of B in
 * shared memory, each element read once from global memory through its operand's index (the M, N, K and batch
 * indices decomposed into the contraction's variables, last variable fastest) and gates (padding reads 0 without
 * touching memory). Sums are in f32 with fused multiply-adds, in K order within a thread: a reordered reduction,
 * which the numerics policy allows (exact reductions turn contractions off).
 *
 * <p>{@code -Dkiln.cuda.gemm=false} turns this off (the program cache keys on the process's settings only through
 * the compiler identity, so set it before the first CUDA kernel is compiled). Contractions with a symbolic extent, or more than 65535 batches or 4 million rows (the grid's limits), keep
 * their loops.
 */
final class CudaGemm {
    private CudaGemm() {}

    static final int THREADS = 256, TILE = 64, DEPTH = 16;
    /** System property that turns generated GEMMs off ({@code false}): contractions then run as their loops. */
    static final String PROPERTY = "kiln.cuda.gemm";
    private static final long MAX_GRID_Y = 65535;

    /** {@code program} as a contraction the GPU runs as a tiled GEMM, if it is one. */
    static Optional<ContractionMatcher.Match> match(KernelProgram program) {
        if ("false".equals(System.getProperty(PROPERTY))) return Optional.empty();
        Optional<ContractionMatcher.Match> m = ContractionMatcher.matchReorderable(program);
        if (m.isEmpty() || m.get().kind() != ContractionMatcher.Kind.GEMM) return Optional.empty();
        Contraction c = m.get().contraction();
        for (Contraction.Var v : c.vars()) if (v.limit() >= 0) return Optional.empty();
        if (c.extent(Role.BATCH) > MAX_GRID_Y || (c.extent(Role.M) + TILE - 1) / TILE > MAX_GRID_Y) return Optional.empty();
        return m;
    }

    /** The grid of a launch: {x, y, z} blocks. */
    static long[] grid(Contraction c) {
        return new long[] {(c.extent(Role.N) + TILE - 1) / TILE, (c.extent(Role.M) + TILE - 1) / TILE, c.extent(Role.BATCH)};
    }

    /**
     * The kernel {@code name(float* C, const float* A, const float* B)}: C is parameter 0 of the contraction's kernel,
     * A and B its operands' parameters.
     */
    static String render(Contraction c, String name) {
        StringBuilder s = new StringBuilder();
        s.append("/* Kiln GEMM: batch ").append(c.extent(Role.BATCH)).append(", M ").append(c.extent(Role.M)).append(", N ")
                .append(c.extent(Role.N)).append(", K ").append(c.extent(Role.K)).append("; A ").append(c.a()).append(", B ")
                .append(c.b()).append(", C ").append(c.c()).append(" (generated) */\n");
        s.append("extern \"C\" __global__ void __launch_bounds__(").append(THREADS).append(") ").append(name)
                .append("(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B) {\n");
        s.append("    const int64_t M = ").append(c.extent(Role.M)).append(", N = ").append(c.extent(Role.N))
                .append(", K = ").append(c.extent(Role.K)).append(";\n");
        s.append("    __shared__ float As[").append(DEPTH).append("][").append(TILE + 4).append("];\n");
        s.append("    __shared__ float Bs[").append(DEPTH).append("][").append(TILE + 4).append("];\n");
        s.append("    const int tid = threadIdx.x, tm = tid / 16, tn = tid % 16;\n");
        s.append("    const int64_t m0 = (int64_t) blockIdx.y * ").append(TILE).append(", n0 = (int64_t) blockIdx.x * ").append(TILE).append(";\n");
        decompose(s, c, Role.BATCH, "(int64_t) blockIdx.z", "b", "    ");
        s.append("    float acc[4][4];\n");
        s.append("    #pragma unroll\n    for (int i = 0; i < 4; i++)\n        #pragma unroll\n        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;\n");
        s.append("    for (int64_t k0 = 0; k0 < K; k0 += ").append(DEPTH).append(") {\n");
        // A tile: TILE rows x DEPTH k, k fastest across threads; B tile: DEPTH k x TILE columns, columns fastest
        stageTile(s, c, c.a(), "A", Role.M, "m", "const int r = e / " + DEPTH + ", q = e % " + DEPTH, "r", "As[q][r]");
        stageTile(s, c, c.b(), "B", Role.N, "n", "const int q = e / " + TILE + ", col = e % " + TILE, "col", "Bs[q][col]");
        s.append("        __syncthreads();\n");
        s.append("        #pragma unroll\n        for (int q = 0; q < ").append(DEPTH).append("; q++) {\n");
        s.append("            float a[4], bb[4];\n");
        s.append("            #pragma unroll\n            for (int i = 0; i < 4; i++) a[i] = As[q][tm + 16 * i];\n");
        s.append("            #pragma unroll\n            for (int j = 0; j < 4; j++) bb[j] = Bs[q][tn + 16 * j];\n");
        s.append("            #pragma unroll\n            for (int i = 0; i < 4; i++)\n                #pragma unroll\n"
                + "                for (int j = 0; j < 4; j++) acc[i][j] = __fmaf_rn(a[i], bb[j], acc[i][j]);\n");
        s.append("        }\n        __syncthreads();\n    }\n");
        s.append("    #pragma unroll\n    for (int i = 0; i < 4; i++) {\n");
        s.append("        const int64_t m = m0 + tm + 16 * i;\n        if (m >= M) continue;\n");
        decompose(s, c, Role.M, "m", "m", "        ");
        s.append("        #pragma unroll\n        for (int j = 0; j < 4; j++) {\n");
        s.append("            const int64_t n = n0 + tn + 16 * j;\n            if (n >= N) continue;\n");
        decompose(s, c, Role.N, "n", "n", "            ");
        s.append("            C[").append(index(c, c.c())).append("] = acc[i][j];\n");
        s.append("        }\n    }\n}\n");
        return s.toString();
    }

    /**
     * The loop by which the block's threads stage one operand's tile in shared memory: element {@code e} of the tile is
     * ({@code q} along K, {@code within} along {@code role}), read where both are in range and every gate holds, else 0.
     */
    private static void stageTile(StringBuilder s, Contraction c, Contraction.Operand o, String buffer, Role role,
                                  String index, String split, String within, String target) {
        String extent = role == Role.M ? "M" : "N", origin = index + "0";
        s.append("        #pragma unroll\n        for (int e = tid; e < ").append(TILE * DEPTH).append("; e += ").append(THREADS).append(") {\n");
        s.append("            ").append(split).append(";\n");
        s.append("            const int64_t ").append(index).append(" = ").append(origin).append(" + ").append(within).append(", k = k0 + q;\n");
        s.append("            float v = 0.0f;\n");
        s.append("            if (").append(index).append(" < ").append(extent).append(" && k < K) {\n");
        decompose(s, c, role, index, index, "                ");
        decompose(s, c, Role.K, "k", "k", "                ");
        load(s, c, o, buffer, "                ");
        s.append("            }\n            ").append(target).append(" = v;\n        }\n");
    }

    /** Declares {@code v<k>} for each variable of {@code role} from the flat index {@code flat} (last variable fastest). */
    private static void decompose(StringBuilder s, Contraction c, Role role, String flat, String tag, String indent) {
        List<Integer> vars = new ArrayList<>();
        for (int v = 0; v < c.vars().size(); v++) if (c.vars().get(v).role() == role) vars.add(v);
        if (c.extent(role) <= Integer.MAX_VALUE) flat = "(int) " + flat; // 32-bit division is far cheaper on a GPU
        long stride = 1;
        for (int i = vars.size() - 1; i >= 0; i--) {
            int v = vars.get(i);
            long extent = c.vars().get(v).extent();
            String e = stride == 1 ? "(" + flat + ")" : "(" + flat + " / " + stride + ")";
            if (i > 0) e = e + " % " + extent;
            s.append(indent).append("const int64_t v").append(v).append(" = ").append(e).append("; /* ").append(tag).append(": ")
                    .append(c.vars().get(v).name().replace("*/", "")).append(" */\n");
            stride *= extent;
        }
    }

    /** {@code v = X[index]} where every gate of the operand holds. */
    private static void load(StringBuilder s, Contraction c, Contraction.Operand o, String buffer, String indent) {
        List<String> conditions = new ArrayList<>();
        for (Contraction.Gate g : o.gates()) {
            String sum = linear(c, g.coeffs(), 0);
            conditions.add("(" + g.lo() + " <= " + sum + " && " + sum + " < " + g.hi() + ")");
        }
        String read = "v = " + buffer + "[" + index(c, o) + "];";
        if (conditions.isEmpty()) s.append(indent).append(read).append('\n');
        else s.append(indent).append("if (").append(String.join(" && ", conditions)).append(") ").append(read).append('\n');
    }

    private static String index(Contraction c, Contraction.Operand o) { return linear(c, o.strides(), o.offset()); }

    /** {@code offset + sum(coeffs[v] * v<v>)} as C, in 64-bit arithmetic. */
    private static String linear(Contraction c, long[] coeffs, long offset) {
        StringBuilder e = new StringBuilder("(INT64_C(").append(offset).append(")");
        for (int v = 0; v < c.vars().size(); v++) {
            if (coeffs[v] == 0) continue;
            e.append(" + INT64_C(").append(coeffs[v]).append(") * v").append(v);
        }
        return e.append(")").toString();
    }
}
