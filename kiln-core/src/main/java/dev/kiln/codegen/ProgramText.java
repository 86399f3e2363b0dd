package dev.kiln.codegen;

import dev.kiln.ir.Slot;

/** A kernel program as readable pseudo-code (what the reference device shows as its "source"). */
public final class ProgramText {
    private ProgramText() {}

    public static String render(KernelProgram p) {
        StringBuilder sb = new StringBuilder("kernel ").append(p.name()).append('(');
        for (int i = 0; i < p.params().size(); i++) {
            Slot s = p.params().get(i);
            sb.append(i > 0 ? ", " : "").append(s.dtype()).append(' ').append(s.name()).append('[').append(p.sizes().get(i)).append(']');
        }
        sb.append(")\n");
        block(p.body(), 1, sb);
        return sb.toString();
    }

    private static void block(Stmt.Block b, int depth, StringBuilder sb) {
        for (Stmt s : b.body()) {
            String pad = "  ".repeat(depth);
            switch (s) {
                case Stmt.Block inner -> block(inner, depth, sb);
                case Stmt.Loop l -> {
                    sb.append(pad).append("for ").append(l.index().name()).append(" in 0..").append(l.limit() == null ? String.valueOf(l.extent()) : "min(" + (l.limitStep() == 1 ? l.limit().name() : "ceil(" + l.limit().name() + " / " + l.limitStep() + ")") + ", " + l.extent() + ")")
                            .append(" (").append(l.kind().name().toLowerCase()).append(")\n");
                    block(l.body(), depth + 1, sb);
                }
                case Stmt.Define d -> sb.append(pad).append(d.register().dtype()).append(' ').append(d.register().name())
                        .append(" = ").append(d.init()).append('\n');
                case Stmt.Accumulate a -> sb.append(pad).append(a.register().name()).append(" = ").append(a.kind().name().toLowerCase())
                        .append('(').append(a.register().name()).append(", ").append(a.value()).append(")\n");
                case Stmt.Store st -> sb.append(pad).append(st.gate() == null ? "" : "if " + st.gate() + ": ").append(st.param().name()).append('[').append(st.index()).append("] = ")
                        .append(st.value()).append('\n');
            }
        }
    }
}
