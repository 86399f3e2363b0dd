package dev.kiln.golden;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/** One golden case, read from kiln-core/src/test/resources/golden/GROUP.json. */
record GoldenCase(String group, String name, String op, GoldenArgs args, List<GoldenArray> inputs,
                  List<GoldenArray> outputs, Double rtol, Double atol) {

    private static final JsonMapper JSON = JsonMapper.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();

    /** All cases of a group, in file order. */
    static List<GoldenCase> load(String group) {
        String path = "/golden/" + group + ".json";
        try (InputStream in = GoldenCase.class.getResourceAsStream(path)) {
            if (in == null) throw new IllegalStateException("missing test resource " + path + "; run tools/golden/gen_" + group + ".py");
            JsonNode root = JSON.readTree(in);
            List<GoldenCase> out = new ArrayList<>();
            for (JsonNode c : root.get("cases")) {
                List<GoldenArray> ins = new ArrayList<>(), outs = new ArrayList<>();
                c.get("inputs").forEach(n -> ins.add(GoldenArray.parse(n)));
                c.get("outputs").forEach(n -> outs.add(GoldenArray.parse(n)));
                out.add(new GoldenCase(group, c.get("name").asText(), c.get("op").asText(), new GoldenArgs(c.get("args")), ins, outs,
                        c.has("rtol") ? c.get("rtol").asDouble() : null, c.has("atol") ? c.get("atol").asDouble() : null));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String toString() { return group + "/" + name; }
}
