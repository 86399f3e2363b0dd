package dev.kiln.clang;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ClangDevice#library}: hand-written C compiled once, called through its downcall handles, errors named. */
class CLibraryTest {
    private static final String SOURCE = """
            #include <stdint.h>
            __attribute__((visibility("default"))) void kiln_test_scale(float *v, int64_t n, float by) {
                for (int64_t i = 0; i < n; i++) v[i] *= by;
            }
            static int hidden(void) { return 1; }
            int kiln_test_not_exported(void) { return hidden(); }
            """;

    private static ClangDevice device() {
        ClangAvailability.compiler(); // skips, with the reason, where there is no C compiler
        return (ClangDevice) DeviceRegistry.get("CLANG");
    }

    @Test
    void compilesOnceAndCallsTheExportedFunction() throws Throwable {
        ClangDevice device = device();
        long compilesBefore = ClangDevice.cacheStats().compiles();
        CLibrary library = device.library(SOURCE);
        MethodHandle scale = library.function("kiln_test_scale", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_FLOAT));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1f, -2f, 3.5f);
            scale.invokeExact(v, 3L, 2f);
            assertThat(v.toArray(ValueLayout.JAVA_FLOAT)).containsExactly(2f, -4f, 7f);
        }
        device.library(SOURCE); // the same source again: from the cache's memory
        assertThat(ClangDevice.cacheStats().compiles() - compilesBefore).isLessThanOrEqualTo(1);
    }

    @Test
    void aSymbolNotExportedIsNamed() {
        CLibrary library = device().library(SOURCE);
        assertThatThrownBy(() -> library.function("kiln_test_not_exported", FunctionDescriptor.of(ValueLayout.JAVA_INT)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kiln_test_not_exported");
    }

    @Test
    void sourceThatDoesNotCompileGivesTheCompilersOutput() {
        ClangDevice device = device();
        assertThatThrownBy(() -> device.library("void kiln_broken( { }"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("kiln_broken");
    }
}
