package dev.kiln.llm.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.Tensor;
import dev.kiln.llm.ModelFileException;
import dev.kiln.llm.safetensors.SafetensorsFile;
import dev.kiln.llm.safetensors.SafetensorsTensor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The tensors of a Hugging Face checkpoint folder: {@code model.safetensors}, or the shards listed by
 * {@code model.safetensors.index.json}, or else every {@code *.safetensors} file in the folder. Hugging Face names
 * ({@code model.layers.0.self_attn.q_proj.weight}) are answered under llama.cpp's ({@code blk.0.attn_q.weight}), the
 * mapping of llama.cpp's converter for the Llama family. Q/K rows are in rotate-half order, as transformers keeps them.
 */
public final class SafetensorsWeights implements WeightSource {
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
    private static final Map<String, String> LAYER_NAMES = Map.ofEntries(
            Map.entry("self_attn.q_proj", "attn_q"), Map.entry("self_attn.k_proj", "attn_k"), Map.entry("self_attn.v_proj", "attn_v"),
            Map.entry("self_attn.o_proj", "attn_output"), Map.entry("mlp.gate_proj", "ffn_gate"), Map.entry("mlp.up_proj", "ffn_up"),
            Map.entry("mlp.down_proj", "ffn_down"), Map.entry("input_layernorm", "attn_norm"), Map.entry("post_attention_layernorm", "ffn_norm"));
    private static final Map<String, String> TOP_NAMES = Map.of("model.embed_tokens", "token_embd", "model.norm", "output_norm", "lm_head", "output");

    private final Path folder;
    private final List<SafetensorsFile> files = new ArrayList<>();
    private final Map<String, SafetensorsTensor> byGgufName = new HashMap<>();

    private SafetensorsWeights(Path folder) { this.folder = folder; }

    /**
     * Maps the safetensors files of {@code folder}.
     *
     * @throws ModelFileException if there are none, the index is malformed or names a missing file, or a file is bad
     */
    public static SafetensorsWeights open(Path folder) {
        SafetensorsWeights w = new SafetensorsWeights(folder);
        try {
            for (Path f : shardFiles(folder)) {
                SafetensorsFile file = SafetensorsFile.open(f);
                w.files.add(file);
                for (SafetensorsTensor t : file.tensors()) {
                    String name = ggufName(t.name());
                    if (name != null) w.byGgufName.put(name, t);
                }
            }
            return w;
        } catch (RuntimeException | Error e) {
            w.close();
            throw e;
        }
    }

    /** llama.cpp's name of a Hugging Face Llama-family tensor, or null for a tensor the model does not use. */
    static String ggufName(String hf) {
        String base, suffix;
        if (hf.endsWith(".weight")) suffix = ".weight";
        else if (hf.endsWith(".bias")) suffix = ".bias";
        else return null;
        base = hf.substring(0, hf.length() - suffix.length());
        String top = TOP_NAMES.get(base);
        if (top != null) return top + suffix;
        Matcher m = LAYER.matcher(base);
        if (!m.matches()) return null;
        String local = LAYER_NAMES.get(m.group(2));
        return local == null ? null : "blk." + m.group(1) + "." + local + suffix;
    }

    private static List<Path> shardFiles(Path folder) {
        Path index = folder.resolve("model.safetensors.index.json");
        if (Files.isRegularFile(index)) return indexedShards(index, folder);
        Path single = folder.resolve("model.safetensors");
        if (Files.isRegularFile(single)) return List.of(single);
        try (Stream<Path> s = Files.list(folder)) {
            List<Path> all = s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
            if (all.isEmpty()) throw new ModelFileException(folder, "expected model.safetensors, model.safetensors.index.json or *.safetensors files, found none");
            return all;
        } catch (IOException e) {
            throw ModelFileException.unreadable(folder, e);
        }
    }

    private static List<Path> indexedShards(Path index, Path folder) {
        JsonNode map;
        try {
            map = new ObjectMapper().readTree(index.toFile()).get("weight_map");
        } catch (IOException e) {
            throw new ModelFileException(index, "expected a JSON object with a weight_map, found invalid JSON: " + e.getMessage(), e);
        }
        if (map == null || !map.isObject()) throw new ModelFileException(index, "weight_map: expected an object of tensor name to file, not found");
        TreeSet<String> names = new TreeSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = map.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String f = e.getValue().textValue();
            if (f == null || f.contains("/") || f.contains("\\") || f.equals("..") || !f.endsWith(".safetensors")) {
                throw new ModelFileException(index, "weight_map." + e.getKey() + ": expected a .safetensors file name in the same folder, found " + e.getValue());
            }
            names.add(f);
        }
        List<Path> out = new ArrayList<>();
        for (String n : names) {
            Path p = folder.resolve(n);
            if (!Files.isRegularFile(p)) throw new ModelFileException(index, "weight_map names shard '" + n + "', which does not exist");
            out.add(p);
        }
        return out;
    }

    @Override
    public Path file() { return folder; }

    @Override
    public Optional<Tensor> find(String name) { return Optional.ofNullable(byGgufName.get(name)).map(SafetensorsTensor::toTensor); }

    @Override
    public boolean interleavedRope() { return false; }

    @Override
    public Optional<float[]> ropeFrequencyFactors() { return Optional.empty(); }

    /** transformers' {@code model_type}s of the family; SmolLM is {@code llama}. */
    @Override
    public java.util.Set<String> architectures() { return java.util.Set.of("llama", "mistral", "qwen2"); }

    @Override
    public void close() {
        for (SafetensorsFile f : files) f.close();
    }
}
