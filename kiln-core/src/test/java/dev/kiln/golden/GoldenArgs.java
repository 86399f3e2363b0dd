package dev.kiln.golden;

import com.fasterxml.jackson.databind.JsonNode;

/** The op parameters of a golden case, with typed accessors and defaults. */
record GoldenArgs(JsonNode node) {
    boolean has(String key) { return node.has(key) && !node.get(key).isNull(); }

    private JsonNode get(String key) {
        if (!has(key)) throw new IllegalArgumentException("golden case lacks argument '" + key + "'");
        return node.get(key);
    }

    int i(String key) { return get(key).asInt(); }

    int i(String key, int dflt) { return has(key) ? i(key) : dflt; }

    long l(String key) { return get(key).asLong(); }

    double d(String key) { return get(key).asDouble(); }

    double d(String key, double dflt) { return has(key) ? d(key) : dflt; }

    boolean b(String key) { return get(key).asBoolean(); }

    boolean b(String key, boolean dflt) { return has(key) ? b(key) : dflt; }

    String s(String key) { return get(key).asText(); }

    String s(String key, String dflt) { return has(key) ? s(key) : dflt; }

    int[] ints(String key) {
        JsonNode a = get(key);
        if (!a.isArray()) return new int[] {a.asInt()};
        int[] out = new int[a.size()];
        for (int k = 0; k < out.length; k++) out[k] = a.get(k).asInt();
        return out;
    }

    int[] ints(String key, int[] dflt) { return has(key) ? ints(key) : dflt; }

    /** A nested int array such as [[1, 2], [0, 0]]. */
    int[][] intPairs(String key) {
        JsonNode a = get(key);
        int[][] out = new int[a.size()][];
        for (int k = 0; k < out.length; k++) {
            out[k] = new int[a.get(k).size()];
            for (int j = 0; j < out[k].length; j++) out[k][j] = a.get(k).get(j).asInt();
        }
        return out;
    }

    /** A number argument as a Java Number of the right kind (Long for integral JSON, Double otherwise). */
    Number number(String key) {
        JsonNode n = get(key);
        return n.isIntegralNumber() ? (Number) n.asLong() : (Number) n.asDouble();
    }
}
