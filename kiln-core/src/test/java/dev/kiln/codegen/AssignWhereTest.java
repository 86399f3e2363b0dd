package dev.kiln.codegen;

import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An assignment of {@code where(c, x, target)} (a KV cache's append) stores x under the gate c and reads nothing of the
 * target: the elements c leaves alone would only get their own value back. Any other kept operand stores everywhere.
 */
class AssignWhereTest {
    @Test
    void onlyTheSelectedElementsAreStoredAndTheTargetIsNotRead() {
        Tensor cache = Tensor.of(new float[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 4, 3);
        Tensor fresh = Tensor.arange(4).ge(2).reshape(4, 1), x = Tensor.of(new float[] {-1, -2, -3}, 1, 3).expand(4, 3);
        Tensor updated = cache.assign(Tensor.where(fresh, x, cache));
        KernelProgram p = assignProgram(updated);
        List<Stmt.Store> stores = stores(p.body());
        assertThat(stores).hasSize(1);
        assertThat(stores.getFirst().gate()).as("stored where the row is fresh").isNotNull();
        UOp buffer = cache.uop();
        while (buffer.op() == Op.RESHAPE) buffer = buffer.src(0); // a realised tensor is its buffer reshaped
        int cacheParam = inputsOf(updated).indexOf(buffer) + 1;
        assertThat(cacheParam).isPositive();
        assertThat(loads(stores.getFirst())).as("the target's own values are not read").noneMatch(l -> l.src(0) == p.params().get(cacheParam).uop());
        updated.realize();
        assertThat(cache.toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5, -1, -2, -3, -1, -2, -3);
    }

    @Test
    void anotherKeptOperandIsStoredEverywhere() {
        Tensor cache = Tensor.of(new float[] {0, 1, 2, 3, 4, 5}, 2, 3), other = Tensor.of(new float[] {6, 7, 8, 9, 10, 11}, 2, 3);
        Tensor fresh = Tensor.arange(2).ge(1).reshape(2, 1), x = Tensor.of(new float[] {-1, -2, -3}, 1, 3).expand(2, 3);
        for (Tensor kept : new Tensor[] {other, cache.flip(0)}) {
            Tensor updated = cache.assign(Tensor.where(fresh, x, kept));
            assertThat(stores(assignProgram(updated).body())).singleElement().satisfies(s -> assertThat(s.gate()).isNull());
        }
    }

    private static KernelProgram assignProgram(Tensor t) {
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k && k.output().op() == Op.ASSIGN) return Lowerer.lower(k.output(), k.inputs(), "assign");
        }
        throw new AssertionError("no assignment kernel");
    }

    private static List<UOp> inputsOf(Tensor t) {
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k && k.output().op() == Op.ASSIGN) return k.inputs();
        }
        throw new AssertionError("no assignment kernel");
    }

    private static List<Stmt.Store> stores(Stmt s) {
        List<Stmt.Store> out = new ArrayList<>();
        switch (s) {
            case Stmt.Block b -> b.body().forEach(c -> out.addAll(stores(c)));
            case Stmt.Loop l -> out.addAll(stores(l.body()));
            case Stmt.Store st -> out.add(st);
            default -> { }
        }
        return out;
    }

    private static List<UOp> loads(Stmt.Store s) {
        List<UOp> out = new ArrayList<>();
        for (UOp root : s.gate() == null ? List.of(s.value(), s.index()) : List.of(s.value(), s.index(), s.gate())) {
            for (UOp u : root.toposort()) if (u.op() == Op.LOAD) out.add(u);
        }
        return out;
    }
}
