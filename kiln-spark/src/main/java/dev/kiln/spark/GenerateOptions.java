package dev.kiln.spark;

import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.SamplingOptions;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

import java.io.Serial;
import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The generation options of a {@code kiln_generate} call: the registration's defaults, overridden field by field by the
 * call's options struct, named as OpenAI's API and kiln-llm's server name them. A plain serialisable copy of kiln-llm's
 * {@link GenerationOptions} (which is not serialisable), always with a seed: the seed a row's generator starts from is
 * {@link #rowSeed derived} from it and the prompt, so a row's text depends on neither its partition nor its task thread
 * nor its executor.
 *
 * <p>The options struct's fields (each optional; a null field, or a null struct, leaves the default):
 * <table>
 *   <caption>options</caption>
 *   <tr><th>field</th><th>SQL type</th><th>values</th></tr>
 *   <tr><td>{@code temperature}</td><td>a number</td><td>[0, 2]; 0 is greedy</td></tr>
 *   <tr><td>{@code top_p}</td><td>a number</td><td>(0, 1]</td></tr>
 *   <tr><td>{@code top_k}</td><td>an integer</td><td>&ge; 0; 0 keeps all</td></tr>
 *   <tr><td>{@code min_p}</td><td>a number</td><td>[0, 1]</td></tr>
 *   <tr><td>{@code repetition_penalty}</td><td>a number</td><td>&gt; 0; 1 is off</td></tr>
 *   <tr><td>{@code presence_penalty}</td><td>a number</td><td>[-2, 2]; 0 is off</td></tr>
 *   <tr><td>{@code seed}</td><td>an integer</td><td>any bigint</td></tr>
 *   <tr><td>{@code stop}</td><td>a string or an array of strings</td><td>non-empty strings</td></tr>
 *   <tr><td>{@code max_tokens}</td><td>an integer</td><td>&ge; 1</td></tr>
 *   <tr><td>{@code ignore_eos}</td><td>a boolean</td><td></td></tr>
 * </table>
 * The ranges are kiln-llm's server's (OpenAI's). Field names match case-insensitively, as Spark's column names do.
 *
 * @param seed the seed rows' seeds derive from (drawn once at registration when none was given)
 */
record GenerateOptions(int maxTokens, List<String> stop, boolean ignoreEos, double temperature, int topK, double topP, double minP,
                       double repetitionPenalty, double presencePenalty, int penaltyLastN, long seed) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The kinds of value an option takes, each with the SQL types it accepts. */
    private enum Kind {
        NUMBER("a number (tinyint, smallint, int, bigint, float, double or decimal)"),
        INTEGER("an integer (tinyint, smallint, int or bigint)"),
        STRINGS("a string or an array of strings"),
        BOOLEAN("a boolean");

        final String expected;

        Kind(String expected) { this.expected = expected; }

        boolean accepts(DataType t) {
            if (t instanceof NullType) return true; // an untyped null literal: the option is not given
            return switch (this) {
                case NUMBER -> t instanceof NumericType;
                case INTEGER -> t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType;
                case STRINGS -> t instanceof StringType || (t instanceof ArrayType a && a.elementType() instanceof StringType);
                case BOOLEAN -> t instanceof BooleanType;
            };
        }
    }

    /** Every option, in the order messages list them. */
    static final List<String> NAMES = List.of("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty", "seed", "stop",
            "max_tokens", "ignore_eos");

    GenerateOptions {
        stop = List.copyOf(stop);
        // kiln-llm's records check the rest; built here (the fields are not yet assigned) so a bad value fails where these
        // options are made, on the driver, not in a task
        new GenerationOptions(maxTokens, stop, ignoreEos, new SamplingOptions(temperature, topK, topP, minP, repetitionPenalty, presencePenalty,
                penaltyLastN, java.util.OptionalLong.of(seed)));
    }

    /**
     * Registration defaults from kiln-llm's options.
     *
     * @param seedIfAbsent the seed when {@code options} has none
     * @throws IllegalArgumentException if {@code options.maxTokens()} is 0 (until the context is full: refused, since a
     *                                  whole DataFrame would generate up to the context)
     */
    static GenerateOptions of(String fn, GenerationOptions options, long seedIfAbsent) {
        if (options.maxTokens() < 1) {
            throw new IllegalArgumentException(fn + ": maxTokens must be at least 1, got " + options.maxTokens()
                    + " (0, up to the context, is not offered for a whole DataFrame)");
        }
        SamplingOptions s = options.sampling();
        return new GenerateOptions(options.maxTokens(), options.stop(), options.ignoreEos(), s.temperature(), s.topK(), s.topP(), s.minP(),
                s.repetitionPenalty(), s.presencePenalty(), s.penaltyLastN(), s.seed().orElse(seedIfAbsent));
    }

    /** kiln-llm's options for one prompt: this seed {@link #rowSeed derived} with the prompt. */
    GenerationOptions forPrompt(String prompt) { return toGenerationOptions(rowSeed(seed, prompt)); }

    private GenerationOptions toGenerationOptions(long generatorSeed) {
        SamplingOptions s = new SamplingOptions(temperature, topK, topP, minP, repetitionPenalty, presencePenalty, penaltyLastN,
                java.util.OptionalLong.of(generatorSeed));
        return new GenerationOptions(maxTokens, stop, ignoreEos, s);
    }

    /**
     * The seed of one row's generator: the first 8 bytes (big-endian) of the SHA-256 of {@code seed} (8 bytes, big-endian)
     * followed by the prompt's UTF-8 bytes. A function of the seed and the prompt only, so the same prompt and seed give the
     * same text whatever partition, task thread or executor generates it, and different prompts draw different streams.
     */
    static long rowSeed(long seed, String prompt) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(ByteBuffer.allocate(Long.BYTES).putLong(seed).array());
            sha.update(prompt.getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(sha.digest()).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /**
     * Checks the type of an options argument: a struct whose fields are known options of accepted types.
     *
     * @param where the argument, for messages ("kiln_generate, argument 2 (options)")
     * @throws IllegalArgumentException naming the argument or field, what it expected and what it was given
     */
    static void checkType(String where, DataType type) {
        if (!(type instanceof StructType struct)) {
            throw new IllegalArgumentException(where + ": expected a struct of options such as named_struct('temperature', 0.8, 'seed', 42),"
                    + " given " + type.simpleString());
        }
        Set<String> seen = new HashSet<>();
        for (StructField f : struct.fields()) {
            String key = f.name().toLowerCase(Locale.ROOT);
            Kind kind = kind(where, f.name());
            if (!seen.add(key)) throw new IllegalArgumentException(where + ": option '" + key + "' is given twice");
            if (!kind.accepts(f.dataType())) {
                throw new IllegalArgumentException(where + ", field '" + f.name() + "': expected " + kind.expected + ", given " + f.dataType().simpleString());
            }
        }
    }

    private static Kind kind(String where, String field) {
        return switch (field.toLowerCase(Locale.ROOT)) {
            case "temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty" -> Kind.NUMBER;
            case "top_k", "seed", "max_tokens" -> Kind.INTEGER;
            case "stop" -> Kind.STRINGS;
            case "ignore_eos" -> Kind.BOOLEAN;
            case "frequency_penalty" -> throw new IllegalArgumentException(where + ": option 'frequency_penalty' is not supported"
                    + " (kiln-llm has presence_penalty and repetition_penalty)");
            default -> throw new IllegalArgumentException(where + ": unknown option '" + field + "'; expected some of " + NAMES);
        };
    }

    /**
     * These options overridden by the non-null fields of {@code options} (null: these options).
     *
     * @throws IllegalArgumentException naming the field, what it expected and what it was given
     */
    GenerateOptions with(String where, Row options) {
        if (options == null) return this;
        StructType schema = options.schema();
        if (schema == null) throw new IllegalStateException(where + ": Spark passed the options struct without its schema");
        checkType(where, schema);
        int maxTokens = this.maxTokens, topK = this.topK;
        List<String> stop = this.stop;
        boolean ignoreEos = this.ignoreEos;
        double temperature = this.temperature, topP = this.topP, minP = this.minP, repetition = this.repetitionPenalty, presence = this.presencePenalty;
        long seed = this.seed;
        for (int i = 0; i < schema.fields().length; i++) {
            if (options.isNullAt(i)) continue;
            String field = schema.fields()[i].name();
            String at = where + ", field '" + field + "'";
            Object v = options.get(i);
            switch (field.toLowerCase(Locale.ROOT)) {
                case "temperature" -> temperature = number(at, v, 0, 2, "[0, 2] (0 is greedy)");
                case "top_p" -> {
                    topP = number(at, v, 0, 1, "(0, 1]");
                    if (topP == 0) throw new IllegalArgumentException(at + ": expected a number in (0, 1], given 0");
                }
                case "top_k" -> topK = (int) integer(at, v, 0, Integer.MAX_VALUE, "an integer >= 0 (0 keeps all)");
                case "min_p" -> minP = number(at, v, 0, 1, "[0, 1]");
                case "repetition_penalty" -> {
                    repetition = number(at, v, 0, Double.MAX_VALUE, "> 0 (1 is off)");
                    if (repetition == 0) throw new IllegalArgumentException(at + ": expected a number > 0 (1 is off), given 0");
                }
                case "presence_penalty" -> presence = number(at, v, -2, 2, "[-2, 2] (0 is off)");
                case "seed" -> seed = integer(at, v, Long.MIN_VALUE, Long.MAX_VALUE, "an integer");
                case "max_tokens" -> maxTokens = (int) integer(at, v, 1, Integer.MAX_VALUE, "an integer >= 1");
                case "stop" -> stop = strings(at, v);
                case "ignore_eos" -> {
                    if (!(v instanceof Boolean b)) throw new IllegalArgumentException(at + ": expected a boolean, given " + describe(v));
                    ignoreEos = b;
                }
                default -> throw new IllegalStateException(at + ": checkType let an unknown option through");
            }
        }
        return new GenerateOptions(maxTokens, stop, ignoreEos, temperature, topK, topP, minP, repetition, presence, penaltyLastN, seed);
    }

    private static double number(String at, Object v, double lo, double hi, String range) {
        double d;
        if (v instanceof BigDecimal b) d = b.doubleValue();
        else if (v instanceof Number n) d = n.doubleValue();
        else throw new IllegalArgumentException(at + ": expected a number in " + range + ", given " + describe(v));
        if (!(d >= lo && d <= hi)) throw new IllegalArgumentException(at + ": expected a number in " + range + ", given " + v);
        return d;
    }

    private static long integer(String at, Object v, long lo, long hi, String range) {
        if (!(v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte)) {
            throw new IllegalArgumentException(at + ": expected " + range + ", given " + describe(v));
        }
        long l = ((Number) v).longValue();
        if (l < lo || l > hi) throw new IllegalArgumentException(at + ": expected " + range + ", given " + l);
        return l;
    }

    private static List<String> strings(String at, Object v) {
        List<Object> items = new ArrayList<>();
        if (v instanceof String s) items.add(s);
        else if (v instanceof scala.collection.Iterable<?> it) items.addAll(CollectionConverters.asJavaCollection(it));
        else if (v instanceof List<?> l) items.addAll(l);
        else throw new IllegalArgumentException(at + ": expected a string or an array of strings, given " + describe(v));
        List<String> out = new ArrayList<>();
        for (Object o : items) {
            if (!(o instanceof String s)) throw new IllegalArgumentException(at + ": expected non-null strings, given " + describe(o) + " in the array");
            if (s.isEmpty()) throw new IllegalArgumentException(at + ": stop strings must not be empty");
            out.add(s);
        }
        return out;
    }

    private static String describe(Object v) { return v == null ? "null" : v + " (" + v.getClass().getSimpleName() + ")"; }
}
