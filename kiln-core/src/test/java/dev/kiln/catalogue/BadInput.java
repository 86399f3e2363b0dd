package dev.kiln.catalogue;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * One row of a bad-input catalogue (issue 13): what is wrong, the call that gets it, the exception type it must throw
 * and the parts its message must hold. {@link #check()} asserts the whole contract of a refusal: exactly that type,
 * a message of one line that holds every part (what was expected and what was given), and no Java internals in it (no
 * JDK class name, no raw exception name such as {@code NullPointerException}). The catalogues of kiln-core, kiln-onnx
 * (through kiln-core's test jar) run their rows through it, one parameterized test per surface.
 */
public record BadInput(String what, Call call, Class<? extends Throwable> type, List<String> parts) {
    /** The call under test; it must throw. */
    @FunctionalInterface
    public interface Call {
        void run() throws Throwable;
    }

    /** JDK package names and the raw exceptions a caller must never see in a message. */
    private static final Pattern INTERNALS = Pattern.compile("\\b(java|javax|jdk|sun)\\.[a-z]+\\.|\\b(NullPointer|IndexOutOfBounds|"
            + "ArrayIndexOutOfBounds|StringIndexOutOfBounds|ClassCast|Arithmetic|NegativeArraySize|NumberFormat|NoSuchElement|"
            + "ArrayStore|ConcurrentModification)Exception\\b|\\b(OutOfMemory|StackOverflow|InternalError)\\b");

    public BadInput {
        Objects.requireNonNull(what);
        Objects.requireNonNull(call);
        Objects.requireNonNull(type);
        parts = List.copyOf(parts);
    }

    /** A row: {@code call} must throw exactly {@code type}, with a one-line message holding every part. */
    /** A catalogue holds at least {@code min} rows, no two with the same description. */
    public static void assertDistinct(java.util.List<BadInput> all, int min) {
        org.assertj.core.api.Assertions.assertThat(all).hasSizeGreaterThanOrEqualTo(min);
        org.assertj.core.api.Assertions.assertThat(all.stream().map(BadInput::what).distinct().count()).isEqualTo(all.size());
    }

    public static BadInput bad(String what, Class<? extends Throwable> type, Call call, String... parts) {
        return new BadInput(what, call, type, List.of(parts));
    }

    /** Runs the call and asserts the refusal's contract; returns the exception for further checks. */
    public Throwable check() {
        Throwable t = catchThrowable(call::run);
        assertThat(t).as("%s: the call must throw %s", what, type.getSimpleName()).isNotNull();
        assertThat(t).as("%s: exception type (message: %s)", what, t.getMessage()).isExactlyInstanceOf(type);
        String m = t.getMessage();
        assertThat(m).as("%s: message", what).isNotBlank();
        assertThat(m).as("%s: the message is one line", what).doesNotContain("\n", "\r");
        assertThat(m).as("%s: no Java internals in the message", what).doesNotContainPattern(INTERNALS);
        for (String p : parts) assertThat(m).as("%s: the message names what was expected and given", what).contains(p);
        return t;
    }

    @Override
    public String toString() { return what; }
}
