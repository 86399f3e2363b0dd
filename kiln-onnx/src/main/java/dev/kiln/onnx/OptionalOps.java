package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.List;

import static dev.kiln.onnx.OnnxOps.addHost;

/** The optional operators (Optional, OptionalHasElement, OptionalGetElement) on {@link OnnxValue.OptionalValue}s. */
final class OptionalOps {
    private OptionalOps() {}

    static void register() {
        // the type attribute of an empty optional only declares what it would hold: an empty optional holds nothing to check
        addHost("Optional", 15, c -> {
            if (!c.given(0)) return List.of(new OnnxValue.OptionalValue(null));
            OnnxValue v = c.value(0);
            if (v instanceof OnnxValue.OptionalValue) throw c.bad("input 0 is an optional; an optional cannot hold an optional");
            return List.of(new OnnxValue.OptionalValue(v));
        }, null);
        addHost("OptionalHasElement", 15, OnnxOps.Kind.HOST_STRUCTURE, OptionalOps::hasElement, null);
        addHost("OptionalGetElement", 15, OptionalOps::getElement, null);
    }

    /** True when the optional holds a value; from opset 18 a tensor or sequence holds itself, and no input is empty. */
    private static List<OnnxValue> hasElement(OpContext c) {
        boolean has;
        if (!c.given(0)) {
            if (c.opset < 18) throw c.bad("needs input 0 before opset 18");
            has = false;
        } else {
            has = switch (c.value(0)) {
                case OnnxValue.OptionalValue o -> o.isPresent();
                case OnnxValue v -> {
                    if (c.opset < 18) throw c.bad("input 0 must be an optional before opset 18, got " + v.describe());
                    yield true;
                }
            };
        }
        return List.of(SequenceOps.tensor(Tensor.of(new boolean[] {has}).reshape().to(c.device)));
    }

    /** The value an optional holds (an empty one is an error); from opset 18 a tensor or sequence is itself. */
    private static List<OnnxValue> getElement(OpContext c) {
        return List.of(switch (c.value(0)) {
            case OnnxValue.OptionalValue(OnnxValue v) -> {
                if (v == null) throw c.bad("input 0 ('" + c.node.inputs().getFirst() + "') is an empty optional; it has no element to get");
                yield v;
            }
            case OnnxValue v -> {
                if (c.opset < 18) throw c.bad("input 0 must be an optional before opset 18, got " + v.describe());
                yield v;
            }
        });
    }
}
