/**
 * Kiln core: the IR, the lazy {@link dev.kiln.Tensor} front end, the runtime types and the
 * INTERP reference device.
 */
module dev.kiln.core {
    requires transitive jdk.incubator.vector;
    requires java.compiler;

    exports dev.kiln;
    exports dev.kiln.ir;
    exports dev.kiln.models;
    exports dev.kiln.runtime;

    uses dev.kiln.runtime.DeviceProvider;
    provides dev.kiln.runtime.DeviceProvider with dev.kiln.interp.InterpDeviceProvider;
}
