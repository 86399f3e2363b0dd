package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;

/**
 * A stencil contraction read as a 2-D convolution of planes, at fixed extents: for each outer point (a channel), output
 * pixel {@code (y, x)} sums tap {@code (ky, kx)}'s weight times plane pixel {@code (u, v) = (sy y + dy ky, sx x + dx kx)},
 * where the plane pixel is B's element {@code outerB[o] + rowStride u + v} when {@code ylo <= u < yhi} and
 * {@code xlo <= v < xhi} (B's gates) and 0 outside (the padding). Found from B's strides and gates; {@link #of} says
 * why a contraction is not of this form.
 *
 * <p>{@link PlaneStencil} copies a band of each plane into zero-padded scratch split into {@code sy * sx} phases (plane
 * rows {@code u ≡ a (mod sy)}, columns {@code v ≡ b (mod sx)}), so that for every tap the band's outputs, laid out
 * {@code q = (y - y0) * width + x}, read one contiguous run of a phase: a stride-2 convolution reads every other
 * element of the plane, but every element of a phase.
 */
final class PlaneGeometry {
    /** Most row phases (the row stride); beyond it the copy would be mostly padding. */
    private static final int MAX_ROW_STRIDE = 4;

    final int rowVar, kyVar, kxVar;
    final int sy, sx, dy, dx;
    /** Output rows and columns, window rows and columns. */
    final int outRows, outColumns, kh, kw;
    final long rowStride;
    /** The plane pixels that exist (clipped to longs' range where B has no gate on an axis). */
    final long ylo, yhi, xlo, xhi;
    /** Columns of each column phase (the padded plane's columns read, divided among the phases). */
    final int width;
    /** Phase rows a tap's row offset adds: {@code (dy ky) / sy} at most. */
    final int haloRows;

    private PlaneGeometry(int rowVar, int kyVar, int kxVar, int sy, int sx, int dy, int dx, int outRows, int outColumns, int kh, int kw,
                          long rowStride, long ylo, long yhi, long xlo, long xhi) {
        this.rowVar = rowVar;
        this.kyVar = kyVar;
        this.kxVar = kxVar;
        this.sy = sy;
        this.sx = sx;
        this.dy = dy;
        this.dx = dx;
        this.outRows = outRows;
        this.outColumns = outColumns;
        this.kh = kh;
        this.kw = kw;
        this.rowStride = rowStride;
        this.ylo = ylo;
        this.yhi = yhi;
        this.xlo = xlo;
        this.xhi = xhi;
        int columnsRead = sx * (outColumns - 1) + dx * (kw - 1) + 1;
        this.width = (columnsRead + sx - 1) / sx;
        this.haloRows = dy * (kh - 1) / sy;
    }

    /** What {@link #of} found: the geometry, or why there is none. */
    record Found(PlaneGeometry geometry, String whyNot) {}

    /**
     * The geometry of {@code c} at extents {@code ext}, with {@code column} its stencil column, {@code rowVars} the other N
     * variables, {@code tapVars} the K variables and {@code outerVars} the batch and M ones.
     */
    static Found of(Contraction c, long[] ext, int column, int[] outerVars, int[] rowVars, int[] tapVars) {
        if (rowVars.length != 1 || tapVars.length != 2) {
            return new Found(null, rowVars.length + " row variables and " + tapVars.length + " window variables (a 2-D window over one row variable is handled)");
        }
        Contraction.Operand b = c.b();
        int y = rowVars[0];
        // the window variable with the smaller stride in B moves along the row
        int kx = Math.abs(b.stride(tapVars[0])) <= Math.abs(b.stride(tapVars[1])) ? tapVars[0] : tapVars[1];
        int ky = kx == tapVars[0] ? tapVars[1] : tapVars[0];
        long sx = b.stride(column), dx = b.stride(kx), sby = b.stride(y), sbky = b.stride(ky);
        if (ext[kx] == 1) dx = 0;
        if (ext[ky] == 1) sbky = 0;
        if (ext[y] == 1) sby = 0;
        if (dx < 0 || sby < 0 || sbky < 0) return new Found(null, "a window or row that runs backwards in B");
        long ylo = Long.MIN_VALUE / 4, yhi = Long.MAX_VALUE / 4, xlo = ylo, xhi = yhi;
        long rowStride = 0, sy = -1, dy = -1;
        for (Gate g : b.gates()) {
            for (int v : outerVars) if (g.coeff(v) != 0 && ext[v] > 1) return new Found(null, "padding that moves with the channel");
            boolean columnGate = g.coeff(column) != 0 || g.coeff(kx) != 0, rowGate = g.coeff(y) != 0 || g.coeff(ky) != 0;
            if (columnGate && rowGate) return new Found(null, "a gate across both axes of the plane");
            if (columnGate) {
                if (g.coeff(column) != sx || (ext[kx] > 1 && g.coeff(kx) != dx)) return new Found(null, "a column gate not in B's element units");
                xlo = Math.max(xlo, g.lo());
                xhi = Math.min(xhi, g.hi());
            } else if (rowGate) {
                long gy = ext[y] > 1 ? g.coeff(y) : -1, gky = ext[ky] > 1 ? g.coeff(ky) : -1;
                if (gy == 0 && gky == 0 || gy < -1 || gky < -1) return new Found(null, "a row gate the plane's rows do not move");
                if (sy < 0) {
                    // B's row stride in plane rows: the gate counts plane rows, B elements
                    long unit = gy > 0 ? sby / gy : sbky / gky;
                    if (unit <= 0) return new Found(null, "a row gate not proportional to B's row strides");
                    rowStride = unit;
                    sy = gy > 0 ? gy : 1;
                    dy = gky > 0 ? gky : 0;
                }
                if ((gy > 0 && gy != sy) || (gky > 0 && gky != dy) || sby != sy * rowStride && ext[y] > 1 || sbky != dy * rowStride && ext[ky] > 1) {
                    return new Found(null, "row gates not proportional to B's row strides");
                }
                ylo = Math.max(ylo, g.lo());
                yhi = Math.min(yhi, g.hi());
            } else {
                // a gate on neither axis (on the taps or channels alone, constant here): holds everywhere or nowhere
                return new Found(null, "a gate on neither axis of the plane");
            }
        }
        if (sy < 0) {
            // no row gate: the rows are those of B's strides
            rowStride = gcd(sby, sbky);
            if (rowStride == 0) rowStride = 1;
            sy = sby / rowStride;
            dy = sbky / rowStride;
        }
        if (ext[y] == 1) sy = 1;
        if (ext[ky] == 1) dy = 0;
        if (sy < 1 || sy > MAX_ROW_STRIDE) return new Found(null, "row stride " + sy);
        if (sx != 1 && sx != 2) return new Found(null, "column stride " + sx);
        if (dy > 64 || dx > 64) return new Found(null, "dilation above 64");
        return new Found(new PlaneGeometry(y, ky, kx, (int) sy, (int) sx, (int) dy, (int) dx, (int) ext[y], (int) ext[column], (int) ext[ky],
                (int) ext[kx], rowStride, ylo, yhi, xlo, xhi), null);
    }

    private static long gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return Math.abs(a);
    }

    /** Phases of the plane, each {@code bandRows + haloRows} rows of {@link #width} columns, for a band. */
    int phases() { return sy * sx; }

    /** Tap {@code (ky, kx)}'s phase (row phase major). */
    int phase(int ky, int kx) { return (dy * ky) % sy * sx + (dx * kx) % sx; }

    /** Where tap {@code (ky, kx)}'s run starts within its phase of a band's scratch. */
    int offsetInPhase(int ky, int kx) { return (dy * ky) / sy * width + (dx * kx) / sx; }
}
