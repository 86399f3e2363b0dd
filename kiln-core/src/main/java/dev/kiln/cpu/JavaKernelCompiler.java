package dev.kiln.cpu;

import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.MethodModel;
import java.lang.classfile.attribute.CodeAttribute;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.FileObject;
import javax.tools.ForwardingJavaFileManager;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileManager;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.StandardLocation;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Compiles generated kernel sources with the JDK's {@code javax.tools} compiler, in memory (no files on
 * disk), and loads each class as a hidden class of package {@code dev.kiln.cpu}: a kernel that is no
 * longer referenced can be unloaded. A batch compiles in one compiler task, which costs far less than
 * one task per kernel.
 *
 * <p>A source that does not compile is a Kiln bug, so it fails loudly with an
 * {@link IllegalStateException} carrying the diagnostics and the numbered source.
 */
public final class JavaKernelCompiler {
    private JavaKernelCompiler() {}

    /** The type of every kernel's {@code run(MemorySegment[] bufs, long[] vars, long start, long end)}. */
    public static final MethodType RUN_TYPE = MethodType.methodType(void.class, MemorySegment[].class, long[].class, long.class, long.class);

    private static final String PACKAGE = "dev.kiln.cpu";
    private static final List<String> OPTIONS = List.of("--add-modules", "jdk.incubator.vector", "-proc:none", "-implicit:none", "-nowarn");

    /** A class to compile: its simple name in package {@code dev.kiln.cpu} and its source. */
    public record Source(String className, String code) {}

    /**
     * One compiled and loaded class.
     *
     * @param className  the simple name it was compiled under
     * @param classBytes its class file (define it again with {@link #define})
     * @param run        its static {@code run} method, of type {@link #RUN_TYPE}
     */
    public record Compiled(String className, byte[] classBytes, MethodHandle run) {}

    /**
     * A compiled batch.
     *
     * @param classes      one entry per source, in order
     * @param compileNanos time spent in the Java compiler
     */
    public record Batch(List<Compiled> classes, long compileNanos) {}

    // javac's file manager caches the platform classes it has read; reusing it makes later batches cheaper.
    // It is not thread-safe, hence the lock around every compilation.
    private static final Object LOCK = new Object();
    private static StandardJavaFileManager standardFiles;

    /**
     * Compiles {@code sources} in one compiler task and loads every class.
     *
     * @throws IllegalArgumentException if two sources share a class name
     * @throws IllegalStateException    if a source does not compile (the message holds the diagnostics and the
     *                                  source), or if the JDK has no Java compiler
     */
    public static Batch compile(List<Source> sources) {
        Set<String> names = new HashSet<>();
        for (Source s : sources) {
            if (!names.add(s.className())) throw new IllegalArgumentException("compile: two sources define class " + s.className());
        }
        if (sources.isEmpty()) return new Batch(List.of(), 0);
        Map<String, byte[]> bytes;
        long t0 = System.nanoTime();
        synchronized (LOCK) {
            bytes = javac(sources);
        }
        long nanos = System.nanoTime() - t0;
        List<Compiled> out = new ArrayList<>();
        for (Source s : sources) {
            byte[] b = bytes.remove(PACKAGE + "." + s.className());
            if (b == null) throw new IllegalStateException("compile: no class file for " + s.className() + "; does the source declare it?\n" + numbered(s.code()));
            out.add(new Compiled(s.className(), b, define(b)));
        }
        if (!bytes.isEmpty()) throw new IllegalStateException("compile: generated sources produced extra classes " + bytes.keySet());
        return new Batch(List.copyOf(out), nanos);
    }

    /**
     * Defines a compiled kernel class as a hidden class of package {@code dev.kiln.cpu} and returns its
     * {@code run} method.
     *
     * @throws IllegalArgumentException if the bytes are not a kernel class of this package
     */
    public static MethodHandle define(byte[] classBytes) {
        try {
            MethodHandles.Lookup hidden = MethodHandles.lookup().defineHiddenClass(classBytes, true);
            return hidden.findStatic(hidden.lookupClass(), "run", RUN_TYPE);
        } catch (IllegalAccessException | NoSuchMethodException | LinkageError e) {
            throw new IllegalArgumentException("define: not a kernel class of package " + PACKAGE + ": " + e, e);
        }
    }

    /**
     * The bytecode size of the largest method of a compiled class: HotSpot compiles no method above 8000 bytes (unless
     * {@code -XX:-DontCompileHugeMethods}), and such a method runs in the interpreter for ever.
     */
    public static int largestMethodBytes(byte[] classBytes) {
        int max = 0;
        for (MethodModel m : ClassFile.of().parse(classBytes).methods()) {
            max = Math.max(max, m.findAttribute(Attributes.code()).map(CodeAttribute::codeLength).orElse(0));
        }
        return max;
    }

    private static Map<String, byte[]> javac(List<Source> sources) {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        if (compiler == null) {
            throw new IllegalStateException("the CPU device compiles kernels with javax.tools, but this Java runtime has no compiler"
                    + " (module jdk.compiler); run Kiln on a full JDK");
        }
        if (standardFiles == null) {
            standardFiles = compiler.getStandardFileManager(null, Locale.ROOT, StandardCharsets.UTF_8);
            try {
                // generated code uses only the JDK: never scan the application's class path
                standardFiles.setLocation(StandardLocation.CLASS_PATH, List.of());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        Map<String, byte[]> classes = new LinkedHashMap<>();
        List<JavaFileObject> units = new ArrayList<>();
        Map<JavaFileObject, Source> bySource = new LinkedHashMap<>();
        for (Source s : sources) {
            JavaFileObject unit = new InMemorySource(s);
            units.add(unit);
            bySource.put(unit, s);
        }
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        JavaFileManager files = new ForwardingJavaFileManager<>(standardFiles) {
            @Override
            public JavaFileObject getJavaFileForOutput(Location location, String className, JavaFileObject.Kind kind, FileObject sibling) {
                return new SimpleJavaFileObject(URI.create("mem:///" + className.replace('.', '/') + kind.extension), kind) {
                    @Override
                    public OutputStream openOutputStream() {
                        return new ByteArrayOutputStream() {
                            @Override
                            public void close() { classes.put(className, toByteArray()); }
                        };
                    }
                };
            }
        };
        boolean ok = compiler.getTask(null, files, diagnostics, OPTIONS, null, units).call();
        if (!ok) throw new IllegalStateException(report(diagnostics.getDiagnostics(), bySource));
        return classes;
    }

    private static String report(List<Diagnostic<? extends JavaFileObject>> diagnostics, Map<JavaFileObject, Source> bySource) {
        StringBuilder m = new StringBuilder("generated kernel source does not compile (a Kiln bug):\n");
        Set<Source> bad = new LinkedHashSet<>();
        for (Diagnostic<? extends JavaFileObject> d : diagnostics) {
            if (d.getKind() != Diagnostic.Kind.ERROR) continue;
            Source s = d.getSource() == null ? null : bySource.get(d.getSource());
            m.append(s == null ? "?" : s.className()).append(".java:").append(d.getLineNumber()).append(": error: ")
                    .append(d.getMessage(Locale.ROOT)).append('\n');
            if (s != null) bad.add(s);
        }
        for (Source s : bad) m.append("\n--- ").append(s.className()).append(".java\n").append(numbered(s.code()));
        return m.toString();
    }

    private static String numbered(String code) {
        StringBuilder b = new StringBuilder();
        String[] lines = code.split("\n", -1);
        for (int i = 0; i < lines.length; i++) b.append(String.format(Locale.ROOT, "%4d  %s%n", i + 1, lines[i]));
        return b.toString();
    }

    private static final class InMemorySource extends SimpleJavaFileObject {
        private final String code;

        InMemorySource(Source s) {
            super(URI.create("mem:///" + PACKAGE.replace('.', '/') + "/" + s.className() + Kind.SOURCE.extension), Kind.SOURCE);
            this.code = s.code();
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) { return code; }
    }
}
