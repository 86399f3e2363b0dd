package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The models built into Kiln ({@link SmallModels}), runnable by name. */
final class BuiltinModels {
    private BuiltinModels() {}

    /** The names {@link #find} knows. */
    static final List<String> NAMES = List.of("mlp", "transformer");

    /** The built-in model called {@code name}, if there is one. */
    static Optional<Model> find(String name) {
        return switch (name) {
            case "mlp" -> Optional.of(new Builtin("mlp", new TensorSpec("x", DType.F32, new int[] {4, 16}), "probs",
                    in -> SmallModels.mlp(in.get("x"))));
            case "transformer" -> Optional.of(new Builtin("transformer", new TensorSpec("tokens", DType.F32, new int[] {1, 8, 32}), "hidden",
                    in -> SmallModels.transformerBlock(in.get("tokens"), 4)));
            default -> Optional.empty();
        };
    }

    private record Builtin(String name, TensorSpec input, String output, java.util.function.Function<Map<String, Tensor>, Tensor> body)
            implements Model {
        @Override public List<TensorSpec> inputs() { return List.of(input); }

        @Override public List<String> outputNames() { return List.of(output); }

        @Override public List<Tensor> apply(Map<String, Tensor> inputs) { return List.of(body.apply(inputs)); }
    }
}
