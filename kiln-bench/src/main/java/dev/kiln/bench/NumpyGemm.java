package dev.kiln.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * NumPy's side of {@link GemmPeerBench}: {@code np.matmul} of two random f32 n x n matrices into a
 * preallocated output, in a {@code python3 -} subprocess, so whatever BLAS NumPy was built with
 * (OpenBLAS in the wheels) does the work. {@code OPENBLAS_CORETYPE} and {@code OPENBLAS_L2_SIZE} are
 * removed from the subprocess's environment, so OpenBLAS picks its kernel for this CPU itself rather than
 * the one a shell happened to force; the thread count is set with {@code OPENBLAS_NUM_THREADS}.
 */
final class NumpyGemm {
    static final String PEER = "NumPy";
    /** Variables that would override OpenBLAS's own choice of kernel and blocking. */
    static final List<String> UNSET = List.of("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE");
    private static final long TIMEOUT_MINUTES = 10;

    // Prints "KERNEL <what BLAS runs>" once, then "RESULT <n> <ms of each timed run>", or "UNAVAILABLE <why>".
    // The kernel comes from threadpoolctl when it is installed, else from OpenBLAS's own C API (found among
    // the libraries NumPy mapped into this process), so the figure says which code produced it.
    private static final String SCRIPT = """
            import sys, time
            try:
                import numpy as np
            except Exception as e:
                print("UNAVAILABLE", type(e).__name__ + ":", e); sys.exit(0)
            sizes = [int(s) for s in sys.argv[1].split(",")]
            warmup, warmup_s, runs, budget_s, min_runs = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
            np.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))  # loads and starts the BLAS
            kernel = None
            try:
                import threadpoolctl
                blas = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
                kernel = "; ".join(f"{i.get('internal_api')} {i.get('version')} core {i.get('architecture')}"
                                   f" threads {i.get('num_threads')} (threadpoolctl)" for i in blas) or None
            except ImportError:
                pass
            if kernel is None:
                import ctypes
                try:
                    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.lower() and ".so" in l})
                except OSError:
                    libs = []
                for path in libs:
                    lib = ctypes.CDLL(path)
                    for pre, suf in (("openblas_", ""), ("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "64_")):
                        try:
                            core, cfg, nt = (getattr(lib, pre + f + suf) for f in ("get_corename", "get_config", "get_num_threads"))
                        except AttributeError:
                            continue
                        core.restype, cfg.restype, nt.restype = ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int
                        kernel = f"{cfg().decode().strip()} core {core().decode()} threads {nt()} (OpenBLAS C API)"
                        break
                    if kernel:
                        break
            print("KERNEL", f"numpy {np.__version__}:", kernel or "unknown (no threadpoolctl, no OpenBLAS library found)")
            rng = np.random.default_rng(0)
            for n in sizes:
                a = rng.random((n, n), dtype=np.float32) * 2 - 1
                b = rng.random((n, n), dtype=np.float32) * 2 - 1
                c = np.empty((n, n), np.float32)
                i, start = 0, time.perf_counter()  # the same warm-up and run budget as GemmRun.time
                while True:
                    spent = time.perf_counter() - start
                    if i >= 1 and spent >= warmup_s and (i >= warmup or spent >= 2 * warmup_s):
                        break
                    np.matmul(a, b, out=c)
                    i += 1
                ms, until = [], time.perf_counter() + budget_s
                while len(ms) < runs and (len(ms) < min_runs or time.perf_counter() < until):
                    t = time.perf_counter()
                    np.matmul(a, b, out=c)
                    ms.append((time.perf_counter() - t) * 1e3)
                print("RESULT", n, *sorted(ms), flush=True)
            """;

    /**
     * What one subprocess measured.
     *
     * @param kernel the BLAS NumPy ran, in one line, or the reason it could not run
     * @param runs   one {@link GemmRun} per size asked for, in order
     */
    record Outcome(String kernel, List<GemmRun> runs) {}

    private NumpyGemm() {}

    /** Runs every size in one subprocess of {@code python}; a missing python or NumPy makes every size {@link GemmRun.Unavailable}. */
    static Outcome run(String python, List<Integer> sizes, int threads, GemmRun.Timing timing) {
        String sizeList = String.join(",", sizes.stream().map(String::valueOf).toList());
        ProcessBuilder pb = new ProcessBuilder(python, "-", sizeList, String.valueOf(timing.warmupCalls()),
                String.valueOf(timing.warmupTime().toMillis() / 1e3), String.valueOf(timing.runs()),
                String.valueOf(timing.runBudget().toMillis() / 1e3), String.valueOf(GemmRun.Timing.MIN_RUNS)).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        UNSET.forEach(env::remove);
        env.put("OPENBLAS_NUM_THREADS", String.valueOf(threads));
        env.put("OMP_NUM_THREADS", String.valueOf(threads));
        List<String> out;
        try {
            Process p = pb.start();
            try (OutputStream in = p.getOutputStream()) {
                in.write(SCRIPT.getBytes(StandardCharsets.UTF_8));
            }
            // The script prints little, so reading after the end cannot fill the pipe and block the child.
            if (!p.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                return unavailable(sizes, python + " took over " + TIMEOUT_MINUTES + " minutes");
            }
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
            if (p.exitValue() != 0) {
                return unavailable(sizes, python + " exited " + p.exitValue() + ": " + (out.isEmpty() ? "" : out.getLast()));
            }
        } catch (IOException e) {
            return unavailable(sizes, GemmRun.reason(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return unavailable(sizes, "interrupted");
        }
        return parse(out, sizes, threads);
    }

    /** Reads the script's lines; a size without its RESULT line is unavailable with the script's last words. */
    static Outcome parse(List<String> lines, List<Integer> sizes, int threads) {
        String kernel = "unknown";
        Map<Integer, double[]> results = new HashMap<>();
        for (String line : lines) {
            if (line.startsWith("UNAVAILABLE ")) return unavailable(sizes, line.substring("UNAVAILABLE ".length()));
            if (line.startsWith("KERNEL ")) kernel = line.substring("KERNEL ".length());
            if (line.startsWith("RESULT ")) {
                String[] f = line.split(" ");
                results.put(Integer.parseInt(f[1]), Arrays.stream(f, 2, f.length).mapToDouble(Double::parseDouble).sorted().toArray());
            }
        }
        String last = lines.isEmpty() ? "no output" : lines.getLast();
        List<GemmRun> runs = new ArrayList<>();
        for (int n : sizes) {
            double[] ms = results.get(n);
            runs.add(ms == null || ms.length == 0 ? new GemmRun.Unavailable(PEER, "no result: " + last)
                    : new GemmRun.Timed(PEER, ms, null, ms.length + " runs, OPENBLAS_NUM_THREADS=" + threads));
        }
        return new Outcome(kernel, runs);
    }

    private static Outcome unavailable(List<Integer> sizes, String reason) {
        return new Outcome("unavailable (" + reason + ")", sizes.stream().<GemmRun>map(n -> new GemmRun.Unavailable(PEER, reason)).toList());
    }
}
