package dev.kiln;

/** Rearrangements of blocks between the channel axis and the spatial axes of (N, C, H, W) tensors. */
final class Movement {
    private Movement() {}

    /** ONNX DepthToSpace of (N, C, H, W): mode {@code "DCR"} (depth-column-row) or {@code "CRD"}. */
    static Tensor depthToSpace(Tensor x, int blockSize, String mode) {
        String op = "depthToSpace";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (c % (b * b) != 0) {
            throw new IllegalArgumentException(op + ": channels " + c + " of input " + x.shape() + " are not divisible by blockSize^2 = " + b * b);
        }
        int oc = c / (b * b);
        Tensor y = switch (mode == null ? "" : mode) {
            case "DCR" -> x.reshape(n, b, b, oc, h, w).permute(0, 3, 4, 1, 5, 2);
            case "CRD" -> x.reshape(n, oc, b, b, h, w).permute(0, 1, 4, 2, 5, 3);
            default -> throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid are 'DCR', 'CRD'");
        };
        return y.reshape(n, oc, h * b, w * b);
    }

    /** ONNX SpaceToDepth of (N, C, H, W): each b-by-b block becomes b*b channels, block row major. */
    static Tensor spaceToDepth(Tensor x, int blockSize) {
        String op = "spaceToDepth";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (h % b != 0 || w % b != 0) {
            throw new IllegalArgumentException(op + ": spatial size " + h + "x" + w + " of input " + x.shape() + " is not divisible by blockSize " + b);
        }
        return x.reshape(n, c, h / b, b, w / b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h / b, w / b);
    }

    private static void check4d(String op, Tensor x, int b) {
        if (x.ndim() != 4) throw new IllegalArgumentException(op + ": input must be 4-D (N, C, H, W), got " + x.shape());
        if (b <= 0) throw new IllegalArgumentException(op + ": blockSize must be > 0, got " + b);
    }
}
