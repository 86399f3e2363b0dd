package dev.kiln.llm.safetensors;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.llm.ModelFileException;
import dev.kiln.types.DType;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses and checks a safetensors file's structure: an 8-byte little-endian header length, a JSON object mapping each
 * tensor name to {@code {"dtype", "shape", "data_offsets"}} (plus an optional {@code "__metadata__"} object of
 * strings), then the data section. Checks: the header length fits the file and the format's 100 MB limit, the JSON is
 * valid (no duplicate keys, no trailing bytes but the spaces writers pad with), each entry has exactly those three
 * fields, the dtype is F32, F16 or BF16, dimensions are non-negative ints, and data_offsets lie within the data
 * section, are ordered, match the shape's size and do not overlap another tensor's.
 */
final class SafetensorsHeader {
    /** The format's own limit (safetensors' MAX_HEADER_SIZE). */
    static final long MAX_HEADER_BYTES = 100_000_000;
    static final String METADATA = "__metadata__";
    private static final Set<String> FIELDS = Set.of("dtype", "shape", "data_offsets");
    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build())
            // a duplicate tensor name or trailing garbage would otherwise be silently dropped
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    record Parsed(Map<String, String> metadata, List<SafetensorsTensor> tensors, long dataOffset) {}

    private record Entry(String name, DType dtype, int[] shape, long begin, long end) {}

    private SafetensorsHeader() {}

    static Parsed parse(MemorySegment data, Path file) {
        long size = data.byteSize();
        if (size < 8) throw new ModelFileException(file, "truncated: the 8-byte header length needs 8 bytes, the file has " + size);
        long n = data.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        if (n < 2 || n > size - 8 || n > MAX_HEADER_BYTES) {
            throw new ModelFileException(file, "header length: expected 2 to " + Math.min(size - 8, MAX_HEADER_BYTES) + " bytes (the rest of the file, at most "
                    + MAX_HEADER_BYTES + "), found " + Long.toUnsignedString(n));
        }
        JsonNode root;
        try {
            root = JSON.readTree(data.asSlice(8, n).toArray(ValueLayout.JAVA_BYTE));
        } catch (IOException e) {
            String why = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.toString();
            throw new ModelFileException(file, "header: expected a JSON object, found invalid JSON: " + why, e);
        }
        if (root == null || !root.isObject()) throw new ModelFileException(file, "header: expected a JSON object, found " + kind(root));
        long dataOffset = 8 + n, dataBytes = size - dataOffset;
        Map<String, String> metadata = Map.of();
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, JsonNode> field : root.properties()) {
            if (field.getKey().equals(METADATA)) metadata = metadata(file, field.getValue());
            else entries.add(entry(file, field.getKey(), field.getValue(), dataBytes));
        }
        checkOverlaps(file, entries);
        List<SafetensorsTensor> tensors = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            tensors.add(new SafetensorsTensor(file, e.name, e.dtype, e.shape, e.begin, e.end, data.asSlice(dataOffset + e.begin, e.end - e.begin)));
        }
        return new Parsed(metadata, Collections.unmodifiableList(tensors), dataOffset);
    }

    private static Map<String, String> metadata(Path file, JsonNode node) {
        if (!node.isObject()) throw new ModelFileException(file, METADATA + ": expected an object of strings, found " + kind(node));
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            if (!e.getValue().isTextual()) throw new ModelFileException(file, METADATA + "." + e.getKey() + ": expected a string, found " + kind(e.getValue()));
            out.put(e.getKey(), e.getValue().textValue());
        }
        return Collections.unmodifiableMap(out);
    }

    private static Entry entry(Path file, String name, JsonNode node, long dataBytes) {
        String what = "tensor '" + name + "'";
        if (!node.isObject()) throw new ModelFileException(file, what + ": expected an object with dtype, shape and data_offsets, found " + kind(node));
        for (Map.Entry<String, JsonNode> f : node.properties()) {
            if (!FIELDS.contains(f.getKey())) throw new ModelFileException(file, what + ": unexpected field '" + f.getKey() + "'; expected dtype, shape and data_offsets");
        }
        DType dtype = dtype(file, what, node.get("dtype"));
        JsonNode shapeNode = node.get("shape");
        if (shapeNode == null || !shapeNode.isArray()) throw new ModelFileException(file, what + ": shape: expected an array of integers, found " + kind(shapeNode));
        int[] shape = new int[shapeNode.size()];
        long numel = 1;
        for (int i = 0; i < shape.length; i++) {
            shape[i] = (int) integer(file, what + ": shape[" + i + "]", shapeNode.get(i), Integer.MAX_VALUE);
            numel = multiply(file, what + ": the number of values of shape " + shapeNode, numel, shape[i]);
        }
        JsonNode offsets = node.get("data_offsets");
        if (offsets == null || !offsets.isArray() || offsets.size() != 2) {
            throw new ModelFileException(file, what + ": data_offsets: expected an array of two integers, found " + kind(offsets)
                    + (offsets != null && offsets.isArray() ? " of " + offsets.size() : ""));
        }
        long begin = integer(file, what + ": data_offsets[0]", offsets.get(0), Long.MAX_VALUE);
        long end = integer(file, what + ": data_offsets[1]", offsets.get(1), Long.MAX_VALUE);
        if (begin > end || end > dataBytes) {
            throw new ModelFileException(file, what + ": data_offsets [" + begin + ", " + end + "]: expected begin <= end <= " + dataBytes
                    + ", the size of the data section (file truncated or offsets wrong)");
        }
        long bytes = multiply(file, what + ": the byte size", numel, dtype.itemSize());
        if (end - begin != bytes) {
            throw new ModelFileException(file, what + ": data_offsets [" + begin + ", " + end + "] hold " + (end - begin) + " bytes; expected " + bytes
                    + " for " + dtype.shortName().toUpperCase(java.util.Locale.ROOT) + " " + java.util.Arrays.toString(shape));
        }
        return new Entry(name, dtype, shape, begin, end);
    }

    private static DType dtype(Path file, String what, JsonNode node) {
        if (node == null || !node.isTextual()) throw new ModelFileException(file, what + ": dtype: expected a string, found " + kind(node));
        return switch (node.textValue()) {
            case "F32" -> DType.F32;
            case "F16" -> DType.F16;
            case "BF16" -> DType.BF16;
            default -> throw new ModelFileException(file, what + ": dtype " + node.textValue() + " is not supported; expected F32, F16 or BF16");
        };
    }

    /** A JSON integer from 0 to {@code max}. */
    private static long integer(Path file, String what, JsonNode node, long max) {
        if (node == null || !node.isIntegralNumber() || !node.canConvertToLong() || node.longValue() < 0 || node.longValue() > max) {
            throw new ModelFileException(file, what + ": expected an integer from 0 to " + max + ", found " + (node == null ? "nothing" : node.toString()));
        }
        return node.longValue();
    }

    private static long multiply(Path file, String what, long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new ModelFileException(file, what + " overflows 64 bits");
        }
    }

    private static void checkOverlaps(Path file, List<Entry> entries) {
        List<Entry> sorted = new ArrayList<>(entries);
        // by begin, then end: an empty tensor at another's start does not overlap it
        sorted.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        for (int i = 1; i < sorted.size(); i++) {
            Entry a = sorted.get(i - 1), b = sorted.get(i);
            if (b.begin < a.end) {
                throw new ModelFileException(file, "tensor '" + b.name + "': data_offsets [" + b.begin + ", " + b.end + "] overlap tensor '" + a.name
                        + "' at [" + a.begin + ", " + a.end + "]");
            }
        }
    }

    static String kind(JsonNode node) {
        return node == null ? "nothing" : node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    }
}
