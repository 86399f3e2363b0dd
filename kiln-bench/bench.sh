#!/usr/bin/env bash
# Runs Kiln's JMH benchmarks: kiln-bench/bench.sh [JMH args...], e.g.
#   kiln-bench/bench.sh Matmul -p device=CPU -f 1 -wi 3 -i 5
# or a side-by-side harness: kiln-bench/bench.sh --main OnnxPeerBench MODEL.onnx [--device D] [--runs N]
#                         or kiln-bench/bench.sh --main AlternatingBench MODEL.onnx [--builds DIR1,DIR2] [--ort] [--runs N] [--block N]
#                         or kiln-bench/bench.sh --main GemmPeerBench [--sizes 1024,2048] [--devices CPU,CLANG] [--threads 2]
#                         or kiln-bench/bench.sh --main SparkPeerBench [--rows 100000] [--resnet-rows 200] (from the repository root)
# Builds first. The JVM flags Kiln needs are passed to the forked benchmark JVMs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
"$root/kiln" build >/dev/null
jdk="${JAVA_HOME:-}"
if [ -z "$jdk" ] || ! "$jdk/bin/java" -version 2>&1 | grep -q 'version "2[5-9]'; then jdk="$(ls -d /usr/lib/jvm/*25* | head -n 1)"; fi
flags="--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"
# SparkPeerBench: Spark binds and advertises loopback only (its executors, if any, inherit this)
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
if [ "${1:-}" = "--main" ]; then # a side-by-side harness with its own main, e.g. --main OnnxPeerBench MODEL.onnx
    main="$2"; shift 2
    exec "$jdk/bin/java" $flags -cp "$here/target/classes:$here/target/lib/*" "dev.kiln.bench.$main" "$@"
fi
exec "$jdk/bin/java" $flags -cp "$here/target/classes:$here/target/lib/*" org.openjdk.jmh.Main -jvmArgsAppend "$flags" "$@"
