#!/usr/bin/env bash
# The CUDA device's checks on a GPU machine (see pack.sh): the CUDA tests, the golden op suite on CUDA, the two
# CNNs against their expected outputs, then Kiln's and PyTorch's timings. Logs go to $OUT (or /tmp/gpu-out).
# Usage there: bash tools/gpu/check.sh [tests|models|bench]...   (all three when none is named);
# KILN_GPU_TESTS='-c CLASS ...' picks the test classes (JUnit console selectors); KILN_GPU_NO_PEER=1 skips PyTorch.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
g=$root/.gpu
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out" /tmp/kiln-jre
[ -x /tmp/kiln-jre/jre/bin/java ] || tar -C /tmp/kiln-jre -xJf "$g/jre.txz" 2>/dev/null ||
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$g/jre.txz" /tmp/kiln-jre
java=/tmp/kiln-jre/jre/bin/java
opts="--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss8m"
cp="$(ls "$g"/lib/*.jar | tr '\n' ':')$g/test-classes"
export PATH=$PATH:/usr/local/cuda/bin KILN_CACHE_DIR=/tmp/kiln-cache
steps=${*:-tests models bench}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
for step in $steps; do
  echo "== $step ($(date +%T))"
  case $step in
    tests)
      # the CUDA tests first (fast), then the op suite on CUDA alone, then the multi-device tests
      timeout 240 $java $opts -Dkiln.test.devices=CUDA -jar "$g"/junit-platform-console-standalone-*.jar execute -cp "$cp" \
        --disable-banner --details=summary --details-theme=ascii \
        ${KILN_GPU_TESTS:--c dev.kiln.cuda.CudaDeviceTest -p dev.kiln.golden -c dev.kiln.runtime.MultiDevicePlanTest -c dev.kiln.runtime.UnifiedExecutorTest} 2>&1 | tee "$out/tests.log" | grep -v "^\s*at \|^\s*\.\.\." | tail -80 ;;
    models)
      for m in light_squeezenet light_resnet50; do
        timeout 60 $java $opts -cp "$cp" dev.kiln.cli.Main onnx-test "$g/models/$m" --device CUDA 2>&1 | tail -5
      done 2>&1 | tee "$out/models.log" ;;
    bench)
      for m in light_squeezenet light_resnet50; do
        timeout 100 $java $opts -cp "$cp" dev.kiln.cli.Main bench "$g/models/$m/model.onnx" --device CUDA --random-inputs --runs 30 2>&1 | tail -4
      done 2>&1 | tee "$out/bench-models.log"
      timeout 120 $java $opts -cp "$cp" dev.kiln.bench.CudaBench 1024 4096 2>&1 | tee "$out/bench-kiln.log"
      [ -n "${KILN_GPU_NO_PEER:-}" ] || timeout 90 python3 "$root/kiln-bench/gpu/torch_peer.py" 2>&1 | tee "$out/bench-torch.log" ;;
  esac
done
