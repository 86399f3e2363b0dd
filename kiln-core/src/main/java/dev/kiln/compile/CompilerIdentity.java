package dev.kiln.compile;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Everything besides the source that decides what a compiler produces: its name and ordered facts
 * such as {@code java.version}, compiler flags, the vector width or the CPU features. Two compilers
 * with the same identity must turn the same source into interchangeable binaries; that is what lets
 * {@link KernelCache} reuse a binary found on disk.
 *
 * <p>Fact order is part of the identity (it is part of {@link #canonicalForm()}), so a device should
 * list its facts in a fixed order.
 *
 * @param name  the compiler, e.g. {@code javac}, {@code clang} or {@code nvrtc}
 * @param facts the facts, in order, keys unique
 */
public record CompilerIdentity(String name, List<Fact> facts) {
    /** One key/value fact about the compiler. */
    public record Fact(String key, String value) {
        public Fact {
            Objects.requireNonNull(key, "fact key");
            Objects.requireNonNull(value, "fact value");
            if (key.isEmpty()) throw new IllegalArgumentException("compiler identity: empty fact key (value '" + value + "')");
        }
    }

    public CompilerIdentity {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) throw new IllegalArgumentException("compiler identity: empty name");
        facts = List.copyOf(facts);
        Set<String> keys = new HashSet<>();
        for (Fact f : facts) {
            if (!keys.add(f.key())) {
                throw new IllegalArgumentException("compiler identity '" + name + "': fact '" + f.key() + "' given twice");
            }
        }
    }

    /**
     * An identity from alternating keys and values, e.g.
     * {@code of("javac", "java.version", Runtime.version().toString(), "vector.bits", "256")}.
     *
     * @throws IllegalArgumentException if {@code keyValues} has odd length or repeats a key
     */
    public static CompilerIdentity of(String name, String... keyValues) {
        if (keyValues.length % 2 != 0) {
            throw new IllegalArgumentException("compiler identity '" + name + "': keys and values must alternate, got "
                    + keyValues.length + " strings");
        }
        List<Fact> facts = new ArrayList<>(keyValues.length / 2);
        for (int i = 0; i < keyValues.length; i += 2) facts.add(new Fact(keyValues[i], keyValues[i + 1]));
        return new CompilerIdentity(name, facts);
    }

    /** This identity with one more fact at the end. */
    public CompilerIdentity with(String key, String value) {
        List<Fact> more = new ArrayList<>(facts);
        more.add(new Fact(key, value));
        return new CompilerIdentity(name, more);
    }

    /** The value of fact {@code key}, if present. */
    public Optional<String> fact(String key) {
        return facts.stream().filter(f -> f.key().equals(key)).map(Fact::value).findFirst();
    }

    /**
     * The identity as one string that no other identity shares: every string is length-prefixed,
     * so separators inside values (flags are full of spaces and '=') cannot make two identities collide.
     */
    public String canonicalForm() {
        StringBuilder sb = new StringBuilder("kiln-compiler-identity/1\n");
        append(sb, name);
        sb.append(facts.size()).append('\n');
        for (Fact f : facts) {
            append(sb, f.key());
            append(sb, f.value());
        }
        return sb.toString();
    }

    /** Lower-case hex SHA-256 of {@link #canonicalForm()} in UTF-8: stable across processes and machines. */
    public String fingerprint() { return sha256Hex(canonicalForm()); }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(name).append('[');
        for (int i = 0; i < facts.size(); i++) {
            if (i > 0) sb.append(", ");
            sb.append(facts.get(i).key()).append('=').append(facts.get(i).value());
        }
        return sb.append(']').toString();
    }

    private static void append(StringBuilder sb, String s) {
        sb.append(s.length()).append(':').append(s).append('\n');
    }

    static String sha256Hex(String s) { return HexFormat.of().formatHex(sha256(s.getBytes(StandardCharsets.UTF_8))); }

    static byte[] sha256(byte[] bytes) { return sha256().digest(bytes); }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every Java platform provides SHA-256", e);
        }
    }
}
