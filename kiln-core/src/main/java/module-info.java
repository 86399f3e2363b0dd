/**
 * Kiln core: the IR, the lazy {@link dev.kiln.Tensor} front end, the scheduler, the loop IR and its
 * optimiser, the runtime ({@link dev.kiln.runtime.ExecutionPlan}), the INTERP reference device, the CPU
 * device, the CLANG (native C) device and the CUDA kernel compiler.
 */
module dev.kiln.core {
    requires transitive jdk.incubator.vector;
    requires java.compiler;

    exports dev.kiln;
    exports dev.kiln.codegen;
    exports dev.kiln.cuda;
    exports dev.kiln.io;
    exports dev.kiln.ir;
    exports dev.kiln.models;
    exports dev.kiln.onnxspec to dev.kiln.onnx;
    exports dev.kiln.runtime;
    exports dev.kiln.schedule;
    exports dev.kiln.serve;
    exports dev.kiln.serve.moe;
    exports dev.kiln.types;

    uses dev.kiln.runtime.DeviceProvider;
    provides dev.kiln.runtime.DeviceProvider with dev.kiln.interp.InterpDeviceProvider, dev.kiln.cpu.CpuDeviceProvider,
            dev.kiln.clang.ClangDeviceProvider, dev.kiln.cuda.CudaDeviceProvider;
}
