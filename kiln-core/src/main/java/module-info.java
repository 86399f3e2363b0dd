/**
 * Kiln core: the IR, the lazy {@link dev.kiln.Tensor} front end, the scheduler, the loop IR and its
 * optimiser, the runtime ({@link dev.kiln.runtime.ExecutionPlan}), the INTERP reference device, the CPU
 * device, the CLANG (native C) device and the CUDA kernel compiler. It exports the user API only: the
 * front end, the floor types, the runtime's plans and executors, the serving API and file I/O.
 */
module dev.kiln.core {
    requires transitive jdk.incubator.vector;
    requires java.compiler;
    requires jdk.management; // MemoryBudget: the machine's physical memory and the JVM's off-heap limit

    // the user API; the compiler's layers (ir, schedule, codegen) and the devices stay inside
    exports dev.kiln;
    exports dev.kiln.io;
    exports dev.kiln.runtime;
    exports dev.kiln.serve;
    exports dev.kiln.serve.moe;
    exports dev.kiln.types;
    exports dev.kiln.models to dev.kiln.cli;
    exports dev.kiln.onnxspec to dev.kiln.onnx;
    exports dev.kiln.clang to dev.kiln.llm; // ClangDevice.library: native block-quantised products
    exports dev.kiln.cpu to dev.kiln.llm; // PanelProduct: the GEMM tile for the quantised products
    exports dev.kiln.codegen to dev.kiln.llm; // ReductionOrder: a language model fuses its attention only where sums may reorder

    uses dev.kiln.runtime.DeviceProvider;
    provides dev.kiln.runtime.DeviceProvider with dev.kiln.interp.InterpDeviceProvider, dev.kiln.cpu.CpuDeviceProvider,
            dev.kiln.clang.ClangDeviceProvider, dev.kiln.cuda.CudaDeviceProvider;
}
