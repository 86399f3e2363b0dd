package dev.kiln.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** The CLI commands end to end: demo and devices. */
class CommandsTest {
    @Test
    void demoPrintsBothModels() {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            code = Main.run("demo");
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(code).isZero();
        assertThat(text).contains("MLP 16-32-32-10 + softmax").contains("output [4, 10] f32")
                .contains("transformer block").contains("output [1, 8, 32] f32")
                .contains("sum    4.000000"); // four softmax rows
    }

    @Test
    void unknownOptionIsExitCode2() {
        assertThat(Main.run("demo", "--no-such-option")).isEqualTo(2);
    }

    @Test
    void devicesListsEveryKindAndTheDefault() {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            assertThat(Main.run("devices")).isZero();
        } finally {
            System.setOut(old);
        }
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("INTERP   available").contains("CPU").contains("(default)").contains("kernel cache:");
    }
}
