package dev.kiln.codegen;

import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The iterations a kernel's start and end select, as every renderer and the runtime count them. */
class KernelProgramTest {
    private static KernelProgram program(Stmt... body) {
        return new KernelProgram("k", List.of(), List.of(), List.of(), new Stmt.Block(List.of(body)));
    }

    private static Stmt.Loop loop(Stmt.LoopKind kind, long extent) {
        return new Stmt.Loop(new Variable("i", 0, extent - 1), kind, new Stmt.Block(List.of()));
    }

    @Test
    void aBodyThatIsOneOutputLoopIsSplitByItsIterations() {
        for (Stmt.LoopKind kind : List.of(Stmt.LoopKind.GLOBAL, Stmt.LoopKind.THREAD, Stmt.LoopKind.UPCAST)) {
            Stmt.Loop l = loop(kind, 12);
            assertThat(program(l).outputLoop()).isSameAs(l);
            assertThat(program(l).outerExtent()).isEqualTo(12);
        }
    }

    @Test
    void aReduceLoopOrSeveralStatementsAreTheSingleIterationZero() {
        // a kernel whose body is one REDUCE loop runs it whole in iteration 0 (the compiled kernels check end <= 1)
        assertThat(program(loop(Stmt.LoopKind.REDUCE, 12)).outputLoop()).isNull();
        assertThat(program(loop(Stmt.LoopKind.REDUCE, 12)).outerExtent()).isEqualTo(1);
        assertThat(program(loop(Stmt.LoopKind.GLOBAL, 4), loop(Stmt.LoopKind.GLOBAL, 4)).outerExtent()).isEqualTo(1);
        assertThat(program().outerExtent()).isEqualTo(1);
    }
}
