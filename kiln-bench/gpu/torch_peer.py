"""PyTorch's figures for the rows of BENCHMARKS.md that CudaBench measures for Kiln, on the same GPU in the same
run (tools/gpu/check.sh bench): f32 matmul (TF32 off, as Kiln computes in f32), bf16 matmul, an elementwise chain
over 1 GiB, a device-to-device copy of 1 GiB, and ResNet-50 at batch 1 and 32. Medians of CUDA-event timings."""
import statistics
import torch


def median_ms(fn, runs=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
for dt, sizes in ((torch.float32, (1024, 4096)), (torch.bfloat16, (4096, 8192))):
    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        ms = median_ms(lambda: a @ b, runs=10 if n >= 4096 else 20)
        print(f"torch matmul {str(dt).split('.')[-1]} {n}^3: {ms:.3f} ms, {2 * n ** 3 / ms / 1e9:.1f} TFLOP/s")
x = torch.randn((1 << 30) // 4, device="cuda")
gb = 2 * x.numel() * 4 / 1e9
ms = median_ms(lambda: torch.relu(x * 1.5 + 0.25) - x * 0.5, runs=10)
print(f"torch elementwise chain 1 GiB (eager, unfused): {ms:.3f} ms, {gb / ms * 1e3:.0f} GB/s")
y = torch.empty_like(x)
ms = median_ms(lambda: y.copy_(x), runs=10)
print(f"torch copy 1 GiB: {ms:.3f} ms, {gb / ms * 1e3:.0f} GB/s")
del x, y
try:
    import torchvision
    model = torchvision.models.resnet50().cuda().eval()
    with torch.no_grad():
        for batch in (1, 32):
            inp = torch.randn(batch, 3, 224, 224, device="cuda")
            ms = median_ms(lambda: model(inp), runs=20)
            print(f"torch resnet50 f32 batch {batch}: {ms:.3f} ms")
except Exception as e:  # torchvision is part of the image; report rather than fail the run
    print("torch resnet50: not measured:", e)
