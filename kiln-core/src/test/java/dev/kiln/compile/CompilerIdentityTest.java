package dev.kiln.compile;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Compiler identities: canonical form, fingerprint stability and what changes it. */
class CompilerIdentityTest {
    @Test
    void fingerprintIsAStableSha256OfTheCanonicalForm() {
        var id = CompilerIdentity.of("javac", "java.version", "25.0.1", "flags", "-g:none -O");
        assertThat(id.canonicalForm()).isEqualTo(
                "kiln-compiler-identity/1\n5:javac\n2\n12:java.version\n6:25.0.1\n5:flags\n10:-g:none -O\n");
        // Pinned: a change here silently invalidates every user's disk cache, so it must be deliberate.
        assertThat(id.fingerprint()).isEqualTo("e18571c7dbef337bb3d10873861092b64fcb5860a2b58ec20afb4f7cd6e906ed");
        assertThat(CompilerIdentity.of("javac", "java.version", "25.0.1", "flags", "-g:none -O").fingerprint())
                .isEqualTo(id.fingerprint());
        assertThat(CompilerIdentity.sha256Hex("abc"))
                .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    @Test
    void everyPartOfTheIdentityChangesTheFingerprint() {
        var base = CompilerIdentity.of("javac", "a", "1", "b", "2");
        List<CompilerIdentity> others = List.of(
                CompilerIdentity.of("clang", "a", "1", "b", "2"),
                CompilerIdentity.of("javac", "a", "1", "b", "3"),
                CompilerIdentity.of("javac", "b", "2", "a", "1"),   // order is part of the identity
                CompilerIdentity.of("javac", "a", "1"),
                base.with("vector.bits", "512"),
                // Separators inside values cannot forge another identity.
                CompilerIdentity.of("javac", "a", "1\n1:b\n1:2"),
                CompilerIdentity.of("javac", "a", "1", "b", "2\n"));
        for (CompilerIdentity o : others) {
            assertThat(o.fingerprint()).as(o.toString()).isNotEqualTo(base.fingerprint());
            assertThat(o).isNotEqualTo(base);
        }
    }

    @Test
    void accessorsAndValidation() {
        var id = CompilerIdentity.of("nvrtc", "arch", "sm_90").with("flags", "-O3");
        assertThat(id.fact("arch")).contains("sm_90");
        assertThat(id.fact("missing")).isEmpty();
        assertThat(id).hasToString("nvrtc[arch=sm_90, flags=-O3]");
        assertThatThrownBy(() -> CompilerIdentity.of("javac", "a"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keys and values must alternate");
        assertThatThrownBy(() -> CompilerIdentity.of("javac", "a", "1", "a", "2"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fact 'a' given twice");
        assertThatThrownBy(() -> CompilerIdentity.of(""))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty name");
    }
}
