package dev.kiln.runtime;

import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.ProgramCost;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.MemoryPlan;
import dev.kiln.schedule.MemoryPlanner;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * Turns graph outputs into an {@link ExecutionPlan}: schedule, plan memory, lower every kernel,
 * let the device optimise and compile them (one batch), and index every realised node as a buffer.
 */
public final class PlanBuilder {
    private PlanBuilder() {}

    /**
     * {@code root} computed once on a compiling device: a plan is built, run with the bindings and closed,
     * and the output copied into a buffer the caller owns ({@link Device#allocate}).
     */
    public static Buffer realize(Device device, UOp root, Map<Variable, Long> bindings) {
        try (ExecutionPlan plan = build(device, List.of(root))) {
            Map<String, Long> byName = new HashMap<>();
            bindings.forEach((v, value) -> byName.put(v.name(), value));
            plan.executeWithVars(byName);
            Buffer out = plan.outputBuffer();
            Buffer copy = device.allocate(out.dtype(), out.count());
            Transfers.copy(device, out.segment(), device, copy.segment(), out.dtype().byteSize(out.count()));
            Transfers.synchronize(device);
            return copy;
        }
    }

    /** A plan computing {@code roots} on {@code device}. */
    public static ExecutionPlan build(Device device, List<UOp> roots) {
        if (roots.isEmpty()) throw new IllegalArgumentException("prepare: needs at least one output");
        Schedule schedule = Scheduler.schedule(roots);
        MemoryPlan memory = MemoryPlanner.plan(schedule, device.spec().toString());

        // every realised node is a plan buffer: external inputs first (in first-use order), then item outputs
        List<UOp> nodes = new ArrayList<>();
        Map<UOp, Integer> index = new IdentityHashMap<>();
        for (ScheduleItem item : schedule.items()) {
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER && !index.containsKey(in)) {
                    index.put(in, nodes.size());
                    nodes.add(in);
                }
            }
        }
        for (ScheduleItem item : schedule.items()) {
            index.put(item.output(), nodes.size());
            nodes.add(item.output());
        }
        for (UOp r : roots) { // a root that is already a buffer has no item
            if (!index.containsKey(r)) {
                index.put(r, nodes.size());
                nodes.add(r);
            }
        }

        // every step runs on one device: a copy on its target, anything else where its first input lives
        List<Device> itemDevices = new ArrayList<>();
        Map<UOp, Device> deviceOfNode = new IdentityHashMap<>();
        for (ScheduleItem item : schedule.items()) {
            Device d = switch (item) {
                case ScheduleItem.Copy c -> DeviceRegistry.get(c.output().deviceArg());
                default -> item.inputs().isEmpty() ? device : deviceOfNode.computeIfAbsent(item.inputs().getFirst(), PlanBuilder::bufferDevice);
            };
            itemDevices.add(d);
            deviceOfNode.put(item.output(), d);
        }

        // a plan over the memory budget is refused now, before its kernels are compiled
        List<Integer> stepOutputs = schedule.items().stream().map(item -> index.get(item.output())).toList();
        ExecutionPlan.checkBudget(device, memory, schedule.items().size(),
                ExecutionPlan.hostBytes(memory, nodes, ExecutionPlan.nodeDevicesByOutput(device, nodes, stepOutputs, itemDevices)));

        // kernels are lowered, optimised and compiled by their own device, one batch per device
        Map<Device, List<Integer>> kernelsByDevice = new LinkedHashMap<>();
        Map<Integer, String> names = new HashMap<>();
        for (int i = 0; i < schedule.items().size(); i++) {
            if (schedule.items().get(i) instanceof ScheduleItem.Kernel kernel) {
                names.put(i, kernelName(kernel, names.size()));
                kernelsByDevice.computeIfAbsent(itemDevices.get(i), x -> new ArrayList<>()).add(i);
            }
        }
        Map<Integer, CompiledKernel> compiledByItem = new HashMap<>();
        for (var e : kernelsByDevice.entrySet()) {
            List<Integer> items = e.getValue();
            List<CompiledKernel> c = e.getKey().compileKernels(
                    items.stream().map(i -> (ScheduleItem.Kernel) schedule.items().get(i)).toList(),
                    items.stream().map(names::get).toList());
            for (int j = 0; j < c.size(); j++) compiledByItem.put(items.get(j), c.get(j));
        }

        List<PreparedOp> ops = new ArrayList<>();
        Map<Stmt.Block, Long> flopsByBody = new IdentityHashMap<>();
        List<KernelRunner> runners = new ArrayList<>();
        Map<Integer, List<UOp>> checks = new HashMap<>(); // per kernel step: its CHECK nodes by site
        Set<Variable> variables = new LinkedHashSet<>();
        for (int i = 0; i < schedule.items().size(); i++) {
            ScheduleItem item = schedule.items().get(i);
            int out = index.get(item.output());
            List<Integer> ins = item.inputs().stream().map(index::get).toList();
            switch (item) {
                case ScheduleItem.Kernel kk -> {
                    CompiledKernel c = compiledByItem.get(i);
                    KernelProgram p = c.program();
                    variables.addAll(p.variables());
                    // kernels of one structure share their statements (the same layer in every block): count once
                    long flops = flopsByBody.computeIfAbsent(p.body(), b -> ProgramCost.flops(p));
                    ops.add(new PreparedKernel(p.name(), out, ins, p, c.source(), flops, ProgramCost.bytes(p)));
                    runners.add(c.runner());
                    checks.put(i, KernelLowering.indexChecks(kk.output(), kk.inputs())); // the names its sites stand for
                }
                case ScheduleItem.Copy cp -> {
                    UOp src = cp.inputs().getFirst();
                    Device from = deviceOfNode.computeIfAbsent(src, PlanBuilder::bufferDevice); // an input's own, or its producer's
                    ops.add(new PreparedCopy("copy_" + i, out, ins, from.spec().toString(), cp.output().deviceArg(),
                            src.dtype().byteSize(src.shape().numel())));
                    runners.add(null);
                }
                case ScheduleItem.View v -> {
                    ops.add(new PreparedBufferView("view_" + i, out, ins));
                    runners.add(null);
                }
                case ScheduleItem.Join j -> { // its pieces' kernels wrote it
                    ops.add(new PreparedBufferView("join_" + i, out, ins));
                    runners.add(null);
                }
                case ScheduleItem.Custom cu -> {
                    CustomFunction f = cu.output().functionArg();
                    if (f.producedVariable() != null) variables.add(f.producedVariable()); // bound by this step, read by later ones
                    ops.add(new PreparedCustomFunction("custom_" + f.name() + "_" + i, out, ins, f));
                    runners.add(null);
                }
            }
        }
        List<Integer> outputs = roots.stream().map(index::get).toList();
        return new ExecutionPlan(device, schedule, memory, nodes, ops, runners, checks, outputs, List.copyOf(variables), itemDevices);
    }

    /** Kernels per batch of {@link #compileAhead}: large enough to amortise a compiler run, small enough to use every core. */
    private static final int AHEAD_BATCH = 128;

    /** {@link Device#compileAhead}: the kernels of every graph that schedules, in batches compiled side by side. */
    static void compileAhead(Device device, List<List<UOp>> graphs) {
        List<ScheduleItem.Kernel> kernels = new ArrayList<>();
        for (List<UOp> roots : graphs) {
            try {
                for (ScheduleItem item : Scheduler.schedule(roots).items()) {
                    if (item instanceof ScheduleItem.Kernel k) kernels.add(k);
                }
            } catch (RuntimeException e) {
                // reported when the graph's plan is built
            }
        }
        IntStream.range(0, (kernels.size() + AHEAD_BATCH - 1) / AHEAD_BATCH).parallel().forEach(b -> {
            int from = b * AHEAD_BATCH, to = Math.min(kernels.size(), from + AHEAD_BATCH);
            try {
                device.compileKernels(kernels.subList(from, to), IntStream.range(from, to).mapToObj(i -> "k" + i).toList());
            } catch (RuntimeException e) {
                // a kernel that does not lower or compile fails its batch: the plans that need these kernels
                // compile them themselves, and the one at fault reports its problem there
            }
        });
    }

    /** The device whose buffer a realised input node is. */
    private static Device bufferDevice(UOp node) {
        if (node.op() != Op.BUFFER) throw new IllegalStateException("no device known for " + node.op() + node.shape());
        return DeviceRegistry.get(Buffer.of(node).device());
    }

    /** {@code E_4x8_0} for elementwise kernels, {@code r_4x8_1} for kernels with a reduction. */
    private static String kernelName(ScheduleItem.Kernel kernel, int n) {
        boolean reduces = false;
        for (UOp u : kernel.output().toposort(Set.copyOf(kernel.inputs()))) reduces |= u.op() == Op.REDUCE;
        StringBuilder name = new StringBuilder(reduces ? "r_" : "E_");
        int[] dims = kernel.output().shape().toArray();
        if (dims.length == 0) name.append('1');
        for (int k = 0; k < dims.length; k++) name.append(k == 0 ? "" : "x").append(dims[k]);
        return name.append('_').append(n).toString();
    }
}
