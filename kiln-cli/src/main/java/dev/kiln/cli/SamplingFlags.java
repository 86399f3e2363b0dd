package dev.kiln.cli;

import dev.kiln.llm.ModelOptions;
import dev.kiln.types.DType;
import dev.kiln.llm.generate.SamplingOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The options {@code kiln generate} and {@code kiln chat} share: sampling with OpenAI's names and llama.cpp's defaults
 * ({@code --temperature 0.8}, {@code --top-k 40}, {@code --top-p 0.95}, {@code --min-p 0.05}, no penalty), which suit small
 * local models better than OpenAI's (temperature 1, no filter); stop strings; the context length and the device. Each
 * is checked with its command-line name before the model loads.
 */
final class SamplingFlags {
    @Option(names = "--temperature", paramLabel = "T", defaultValue = "0.8",
            description = "Sampling temperature, >= 0; 0 = greedy (always the most likely token) (default: ${DEFAULT-VALUE}).")
    double temperature;

    @Option(names = "--top-k", paramLabel = "K", defaultValue = "40",
            description = "Keep only the K most likely tokens; 0 = off (default: ${DEFAULT-VALUE}).")
    int topK;

    @Option(names = "--top-p", paramLabel = "P", defaultValue = "0.95",
            description = "Nucleus sampling: keep the most likely tokens whose probabilities sum to P, in (0, 1]; 1 = off (default: ${DEFAULT-VALUE}).")
    double topP;

    @Option(names = "--min-p", paramLabel = "P", defaultValue = "0.05",
            description = "Drop tokens less likely than P times the most likely one, in [0, 1]; 0 = off (default: ${DEFAULT-VALUE}).")
    double minP;

    @Option(names = "--repetition-penalty", paramLabel = "R", defaultValue = "1",
            description = "Penalise the last 64 tokens' logits (divide positive ones by R, multiply negative ones), > 0; 1 = off (default: ${DEFAULT-VALUE}).")
    double repetitionPenalty;

    @Option(names = "--presence-penalty", paramLabel = "X", defaultValue = "0",
            description = "Subtract X from the logit of every token among the last 64; 0 = off (default: ${DEFAULT-VALUE}).")
    double presencePenalty;

    @Option(names = "--seed", paramLabel = "S",
            description = "Seed of the random draw: the same seed, options, model and input give the same text (default: a fresh seed, printed with the statistics).")
    Long seed;

    @Option(names = "--stop", paramLabel = "TEXT",
            description = "End the text where it first contains TEXT, which is not printed (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = "--context", paramLabel = "N", defaultValue = "0",
            description = "Context length in tokens (all the text the model reads and writes; the KV caches are sized for it); 0 = the model's, at most "
                    + ModelOptions.DEFAULT_MAX_CONTEXT + " (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--kv-cache", paramLabel = "TYPE", defaultValue = "f32",
            description = "Element type of the KV caches: f32, or f16 (half the memory; llama.cpp's default) (default: ${DEFAULT-VALUE}).")
    String kvCache;

    @Option(names = "--q8-activations",
            description = "Quantise x to 8 bits before the products with Q8_0 and Q4_0 weights, as llama.cpp does (with --kv-cache f16, greedy"
                    + " choices then follow llama.cpp's); --device CLANG only.")
    boolean q8Activations;

    @Mixin
    DeviceOption device;

    /** The sampling options, checked; a fresh seed when none was given. */
    SamplingOptions sampling() {
        check(temperature >= 0 && Double.isFinite(temperature), "--temperature", "a number >= 0 (0 = greedy)", temperature);
        check(topK >= 0, "--top-k", "a whole number >= 0 (0 = off)", topK);
        check(topP > 0 && topP <= 1, "--top-p", "a number in (0, 1]", topP);
        check(minP >= 0 && minP <= 1, "--min-p", "a number in [0, 1]", minP);
        check(repetitionPenalty > 0 && Double.isFinite(repetitionPenalty), "--repetition-penalty", "a number > 0 (1 = off)", repetitionPenalty);
        check(Double.isFinite(presencePenalty), "--presence-penalty", "a finite number (0 = off)", presencePenalty);
        check(context >= 0, "--context", "a whole number >= 0 (0 = the model's)", context);
        for (String s : stop) if (s.isEmpty()) throw new IllegalArgumentException("--stop: expected some text, got an empty string");
        long s = seed != null ? seed : ThreadLocalRandom.current().nextLong();
        return SamplingOptions.defaults().withTemperature(temperature).withTopK(topK).withTopP(topP).withMinP(minP)
                .withRepetitionPenalty(repetitionPenalty).withPresencePenalty(presencePenalty).withSeed(s);
    }

    /**
     * The model options for {@code model}, checked: a bad {@code --device} is bad input named as such, and a folder MODEL
     * must hold config.json and tokenizer.json (said in the command line's words, before kiln-llm's own reading).
     */
    ModelOptions modelOptions(Path model) {
        if (device.device != null) device.resolve();
        if (Files.isDirectory(model)) {
            for (String f : new String[] {"config.json", "tokenizer.json"}) {
                if (!Files.isRegularFile(model.resolve(f))) {
                    throw new IllegalArgumentException(model + ": expected a .gguf file or a Hugging Face model folder (config.json, tokenizer.json,"
                            + " safetensors weights), found a folder without " + f);
                }
            }
        }
        DType cache = switch (kvCache.toLowerCase(java.util.Locale.ROOT)) {
            case "f32" -> DType.F32;
            case "f16" -> DType.F16;
            default -> throw new IllegalArgumentException("--kv-cache: expected f32 or f16, got " + kvCache);
        };
        if (q8Activations && !device.resolve().spec().kind().equals("CLANG")) {
            throw new IllegalArgumentException("--q8-activations: expected --device CLANG (its native products quantise x), got "
                    + (device.device == null ? "the default device " + device.resolve().spec() : "--device " + device.device));
        }
        return ModelOptions.defaults().withDevice(device.device).withContextLength(context).withKvCacheType(cache).withQuantizedActivations(q8Activations);
    }

    static void check(boolean ok, String option, String expected, Object got) {
        if (!ok) throw new IllegalArgumentException(option + ": expected " + expected + ", got " + got);
    }
}
