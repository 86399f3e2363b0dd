package dev.kiln.llm.generate;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class StopStringsTest {
    @Test
    void textIsHeldBackOnlyWhileItMayStillBecomeAStopString() {
        StopStrings s = new StopStrings(List.of("\nUser:", "END"));
        assertThat(s.offer("Hello")).isEqualTo("Hello");
        assertThat(s.offer(" wor")).isEqualTo(" wor");
        assertThat(s.offer("ld\nUs")).isEqualTo("ld");      // "\nUs" may begin "\nUser:"
        assertThat(s.offer("ual")).isEqualTo("\nUsual");    // it did not
        assertThat(s.offer(" E")).isEqualTo(" ");
        assertThat(s.offer("N")).isEmpty();
        assertThat(s.stopped()).isFalse();
        assertThat(s.offer("D and more")).isEmpty();        // "END" completed: nothing after it is released
        assertThat(s.stopped()).isTrue();
        assertThat(s.offer("later")).isEmpty();
    }

    @Test
    void theEarliestStopWinsAndTextBeforeItInTheSamePieceIsReleased() {
        StopStrings s = new StopStrings(List.of("cd", "b"));
        assertThat(s.offer("xabcd")).isEqualTo("xa");
        assertThat(s.stopped()).isTrue();
    }

    @Test
    void flushReleasesWhatWasHeldWhenGenerationEndsOtherwise() {
        StopStrings s = new StopStrings(List.of("###"));
        assertThat(s.offer("a #")).isEqualTo("a ");
        assertThat(s.offer("#")).isEmpty();
        assertThat(s.flush()).isEqualTo("##");
        assertThat(new StopStrings(List.of()).offer("anything")).isEqualTo("anything");
    }
}
