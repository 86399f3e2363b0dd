package dev.kiln.fuzz;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Byte-level mutations in the style of libFuzzer's: flip a bit, set a byte or a 1-, 2-, 4- or 8-byte integer to a
 * boundary value, insert, delete or repeat a range, splice with another input, insert a dictionary token. Used by
 * {@link FuzzCampaign}, in kiln-core's and kiln-onnx's tests.
 */
public final class ByteMutator implements FuzzCampaign.Mutation {
    private static final long[] BOUNDARIES = {0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFF_FFFFL, 0x8000_0000L,
            0xFFFF_FFFFL, 1L << 32, 1L << 40, Long.MAX_VALUE, Long.MIN_VALUE};
    /** Inputs are kept under this size: the parsers' own limits are what is under test, not the harness's memory. */
    private static final int MAX_LEN = 1 << 16;
    private final byte[][] dictionary;

    /** @param tokens words of the format (header keys, literals) that random bytes would rarely spell */
    public ByteMutator(List<String> tokens) {
        this.dictionary = tokens.stream().map(t -> t.getBytes(StandardCharsets.ISO_8859_1)).toArray(byte[][]::new);
    }

    @Override
    public byte[] mutate(byte[] parent, List<byte[]> pool, Random r) {
        byte[] b = parent;
        // stacked mutations, as libFuzzer does: one change rarely gets past a parser's first check
        for (int n = 1 + r.nextInt(4); n > 0; n--) b = once(b, pool, r);
        return b.length > MAX_LEN ? Arrays.copyOf(b, MAX_LEN) : b;
    }

    private byte[] once(byte[] b, List<byte[]> pool, Random r) {
        if (b.length == 0) return insert(b, 0, new byte[] {(byte) r.nextInt()});
        int at = r.nextInt(b.length);
        return switch (r.nextInt(9)) {
            case 0 -> { byte[] c = b.clone(); c[at] ^= (byte) (1 << r.nextInt(8)); yield c; }
            case 1 -> { byte[] c = b.clone(); c[at] = (byte) r.nextInt(); yield c; }
            case 2 -> integer(b, at, r);
            case 3 -> insert(b, at, randomBytes(r, 1 + r.nextInt(8)));
            case 4 -> { int len = 1 + r.nextInt(Math.min(b.length - at, 16)); yield delete(b, at, len); }
            case 5 -> { int len = 1 + r.nextInt(Math.min(b.length - at, 32)); yield insert(b, r.nextInt(b.length + 1), Arrays.copyOfRange(b, at, at + len)); }
            case 6 -> { byte[] o = pool.get(r.nextInt(pool.size())); yield splice(b, o, r); }
            case 7 -> dictionary.length == 0 ? b : insert(b, at, dictionary[r.nextInt(dictionary.length)]);
            default -> Arrays.copyOf(b, r.nextInt(b.length + 1));
        };
    }

    private static byte[] integer(byte[] b, int at, Random r) {
        long v = BOUNDARIES[r.nextInt(BOUNDARIES.length)];
        if (r.nextBoolean()) v = -v;
        int width = 1 << r.nextInt(4);
        byte[] c = b.clone();
        boolean little = r.nextBoolean();
        for (int i = 0; i < width && at + i < c.length; i++) {
            int shift = 8 * (little ? i : width - 1 - i);
            c[at + i] = (byte) (v >>> shift);
        }
        return c;
    }

    private static byte[] randomBytes(Random r, int n) {
        byte[] x = new byte[n];
        r.nextBytes(x);
        return x;
    }

    private static byte[] insert(byte[] b, int at, byte[] what) {
        byte[] c = new byte[b.length + what.length];
        System.arraycopy(b, 0, c, 0, at);
        System.arraycopy(what, 0, c, at, what.length);
        System.arraycopy(b, at, c, at + what.length, b.length - at);
        return c;
    }

    private static byte[] delete(byte[] b, int at, int len) {
        byte[] c = new byte[b.length - len];
        System.arraycopy(b, 0, c, 0, at);
        System.arraycopy(b, at + len, c, at, b.length - at - len);
        return c;
    }

    private static byte[] splice(byte[] a, byte[] o, Random r) {
        int cut = r.nextInt(a.length + 1), from = o.length == 0 ? 0 : r.nextInt(o.length);
        byte[] c = Arrays.copyOf(a, cut + o.length - from);
        System.arraycopy(o, from, c, cut, o.length - from);
        return c;
    }
}
