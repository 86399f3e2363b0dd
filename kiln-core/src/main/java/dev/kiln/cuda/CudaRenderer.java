package dev.kiln.cuda;

import dev.kiln.types.Variable;
import dev.kiln.clang.CPrelude;
import dev.kiln.clang.CRenderer;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Slot;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Renders a {@link KernelProgram} as a CUDA C++ kernel with exactly the semantics of
 * {@link dev.kiln.ir.Alu}: the statements and expressions are {@link CRenderer}'s (and so its base's) (the same helpers,
 * casts, wrapping arithmetic and rounding), and only the kernel around them is CUDA's:
 *
 * <pre>
 * extern "C" __global__ void name(T0* p0, const T1* p1, ..., int64_t* kiln_status,
 *                                 const int64_t var0, ..., int64_t start, int64_t end)
 * </pre>
 *
 * <p>Parameters are the program's, output first, each as a device pointer; {@code kiln_status} points
 * to an {@code int64_t[3]} where an index out of range is reported (1, parameter, index) when range
 * analysis could not bound an access, or (2, site, index) when an index check of data fails
 * (always present, so every kernel has the same argument layout);
 * the variables follow in {@link KernelProgram#variables()} order. When the body is one output loop,
 * its iterations {@code [start, end)} (stopping early at a symbolic axis's size) are spread over the
 * grid: thread {@code t} of the whole grid runs iterations {@code start + t}, {@code start + t + gridSize},
 * ... (a grid-stride loop, so any grid covers the range and threads past its end do nothing). Otherwise
 * the kernel is the single iteration 0, run by thread 0 of block 0 (see {@link KernelProgram#outerExtent}).
 *
 * <p>Inner output loops run inside a thread as in C. Floats keep Alu's rounding only when the kernels
 * are compiled without contraction ({@code -fmad=false}) and with IEEE division and square root, as
 * {@link Nvcc} does. Math functions (sin, exp2, log) are CUDA's: within an ulp or two of the C library's.
 */
public final class CudaRenderer extends CRenderer {
    private CudaRenderer(KernelProgram program) { super(program); }

    /**
     * The CUDA kernel of {@code program} named {@code functionName} (without the prelude).
     *
     * @throws IllegalArgumentException if the name is not a C identifier, or the program uses an op on a
     *                                  dtype that has no meaning for it (as {@link dev.kiln.ir.Alu} would)
     */
    public static String render(KernelProgram program, String functionName) {
        checkFunctionName(functionName);
        return new CudaRenderer(program).renderFunction(functionName);
    }

    /** The prelude every CUDA translation unit starts with: a header, then the C renderer's helpers. */
    public static String prelude() { return PRELUDE; }

    /** One translation unit: the prelude, then {@code kernels}. */
    public static String translationUnit(List<String> kernels) {
        StringBuilder s = new StringBuilder(PRELUDE);
        for (String k : kernels) s.append('\n').append(k);
        return s.toString();
    }

    private static final String HEADER = """
            /* Kiln CUDA kernels: the semantics of dev.kiln.ir.Alu in CUDA C++ (generated; do not edit). */
            /* No headers: the compiler's predefined macros give the fixed-width types, its builtins the math;
               the guards skip what nvcc's implicit cuda_runtime.h may have defined already. */
            """ + CPrelude.FIXED_WIDTH_TYPES + """
            #ifndef INT64_C
            #define INT64_C(c) __INT64_C(c)
            #endif
            #ifndef UINT64_C
            #define UINT64_C(c) __UINT64_C(c)
            #endif
            #ifndef INT32_MIN
            #define INT32_MIN (-__INT32_MAX__ - 1)
            #endif
            #ifndef INT64_MAX
            #define INT64_MAX __INT64_MAX__
            #endif
            #ifndef INT64_MIN
            #define INT64_MIN (-__INT64_MAX__ - 1)
            #endif
            #ifndef NAN
            #define NAN __builtin_nanf("")
            #endif
            #ifndef INFINITY
            #define INFINITY __builtin_inff()
            #endif

            /* two's complement wrap on conversion and arithmetic right shifts, as nvcc defines them */
            static_assert(sizeof(int) == 4 && (int8_t) 200 == -56 && (int32_t) 4294967295u == -1 && (-8 >> 1) == -4,
                          "Kiln kernels need 32-bit int, wrapping conversions and arithmetic right shifts");

            #define KILN_FN static __device__ __forceinline__
            /* the output loop is spread over the grid; inner loops need no vectorisation hint */
            #define KILN_INDEPENDENT

            /* whether 0 <= i < n; if not, the first thread to find such an index reports it in status */
            KILN_FN bool kiln_in_range(int64_t i, int64_t n, int64_t* status, int64_t param) {
                if (__builtin_expect((uint64_t) i < (uint64_t) n, 1)) return true;
                if (atomicCAS((unsigned long long*) status, 0ull, 1ull) == 0ull) {
                    status[1] = param;
                    status[2] = i;
                }
                return false;
            }
            /* an index from data checked against an axis of n elements ([-n, n) where negative indices wrap, else [0, n)):
               out of range, the first thread to fail reports (2, check, index) in status and the index goes on unchanged
               (every read it reaches is gated or clamped) */
            KILN_FN int64_t kiln_check_index(int64_t i, int64_t n, bool wraps, int64_t* status, int64_t check) {
                if (__builtin_expect(i >= (wraps ? -n : 0) && i < n, 1)) return i;
                if (atomicCAS((unsigned long long*) status, 0ull, 2ull) == 0ull) {
                    status[1] = check;
                    status[2] = i;
                }
                return i;
            }
            KILN_FN int64_t kiln_check_index_if(bool gate, int64_t i, int64_t n, bool wraps, int64_t* status, int64_t check) {
                return gate ? kiln_check_index(i, n, wraps, status, check) : i;
            }

            """;

    private static final String PRELUDE = HEADER + helpers();

    /** The output loop as a grid-stride loop over {@code [start, stop)}. */
    @Override
    protected List<String> outputLoopHead(Stmt.Loop split) {
        String i = name(split.index());
        return List.of("const int64_t kiln_stop = " + stop(split) + ";",
                "for (int64_t " + i + " = start + (int64_t) blockIdx.x * blockDim.x + threadIdx.x; " + i + " < kiln_stop; "
                        + i + " += (int64_t) gridDim.x * blockDim.x) {");
    }

    @Override
    protected String singleIterationGuard() { return "if (start < end && blockIdx.x == 0 && threadIdx.x == 0) {"; }

    @Override
    protected String unrollPragma(long extent) { return "#pragma unroll " + Math.min(extent, 64); }

    /** A GPU thread runs its lanes one after the other, and the CUDA prelude has no lane helpers. */
    @Override
    protected boolean vectorisedLanes() { return false; }

    /** A loop over a symbolic size keeps one form on the GPU: its peeled form has not run on one. */
    @Override
    protected boolean peelsLastGroup() { return false; }

    @Override
    protected String function(String functionName, Set<Slot> written, String body) {
        List<String> params = new ArrayList<>();
        for (int i = 0; i < program.params().size(); i++) {
            Slot p = program.params().get(i);
            String t = storageType(p.dtype());
            params.add((written.contains(p) ? t + "* " : "const " + t + "* ") + p.name() + " /* " + p.dtype() + "["
                    + program.sizes().get(i) + "]" + (i == 0 ? ", output" : "") + " */");
        }
        params.add("int64_t* kiln_status /* where an index out of range is reported */");
        for (Variable v : program.variables()) {
            params.add("const int64_t " + name(v) + " /* " + comment(v.name()) + " in [" + v.min() + ", " + v.max() + "] */");
        }
        params.add("int64_t start");
        params.add("int64_t end");
        return "/* Kiln kernel " + comment(program.name()) + " (generated) */\n"
                + "extern \"C\" __global__ void " + functionName + "(\n        " + String.join(",\n        ", params) + ") {\n"
                + body + "}\n";
    }
}
