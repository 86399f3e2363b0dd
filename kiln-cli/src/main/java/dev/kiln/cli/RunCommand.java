package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.io.Npy;
import dev.kiln.runtime.Buffer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** {@code kiln run MODEL}: runs a model once and writes each output as a {@code .npy} file. */
@Command(name = "run", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run a model once on given or generated inputs; write each output to OUTPUT-DIR/NAME.npy and print its"
                + " name, dtype, shape and a summary.",
                "Outputs are written all or nothing. bf16 outputs are stored as f32 (exactly; NumPy has no bf16)."})
final class RunCommand extends ModelCommand {
    @Mixin
    OutputDirOption output;

    @Override
    int execute() {
        try (PreparedModel pm = prepare(); OutputFiles files = new OutputFiles()) {
            try (Progress p = progress("running " + pm.model().name())) {
                pm.execute();
            }
            List<String> lines = new ArrayList<>();
            Set<String> used = new HashSet<>();
            for (PreparedModel.Output o : pm.outputs()) {
                String base = OutputFiles.safeName(o.name());
                String name = base;
                for (int k = 1; !used.add(name); k++) name = base + "_" + k;
                Path target = output.dir.resolve(name + ".npy");
                write(files.stage(target), o);
                String note = o.buffer().dtype() == DType.BF16 ? "  (bf16 stored as f32)" : "";
                lines.add(o.name() + "  " + Reports.summary(o.buffer().dtype(), o.dims(), o.buffer()) + "  -> " + target + note);
            }
            files.commit();
            lines.forEach(out()::println);
        }
        return 0;
    }

    private static void write(Path file, PreparedModel.Output o) {
        Buffer b = o.buffer();
        if (b.dtype() != DType.BF16) {
            Npy.write(file, b, o.dims());
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            Buffer f32 = new Buffer(b.device(), DType.F32, b.count(), arena.allocate(DType.F32.byteSize(b.count()), 4));
            for (long i = 0; i < b.count(); i++) f32.setDouble(i, b.getDouble(i));
            Npy.write(file, DType.F32, o.dims(), f32.segment());
        }
    }
}
