#!/usr/bin/env bash
# Packs what the GPU checks need into .gpu/ (git-ignored), for a machine with a GPU and the CUDA toolkit but no
# JDK or Maven: a portable Java 25 runtime, Kiln's jars, the test classes and their libraries, the two CNNs.
# Usage (here, after ./mvnw install -DskipTests): tools/gpu/pack.sh ; then carry .gpu and run tools/gpu/check.sh there.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.gpu
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
mkdir -p "$out/lib"
# the run's upload is bounded (64 MiB with the tree): an uncompressed jlink image under xz is ~12 MB smaller than
# shared/tools/portable-jre.sh's zip-compressed image under gzip
if [ ! -f "$out/jre.txz" ]; then
  tmp=$(mktemp -d)
  "$JAVA_HOME/bin/jlink" --add-modules java.base,java.compiler,jdk.compiler,jdk.incubator.vector,jdk.unsupported,java.logging,java.management,jdk.management,jdk.zipfs \
    --strip-debug --no-header-files --no-man-pages --compress=zip-0 --output "$tmp/jre" 2>/dev/null
  tar -C "$tmp" -cf - jre | xz -9 -T2 >"$out/jre.txz" && rm -rf "$tmp"
fi
rm -f "$out/jre.tgz"
rm -f "$out"/lib/*.jar
cp "$root"/kiln-cli/target/kiln-cli-*.jar "$root"/kiln-cli/target/lib/*.jar "$out/lib/"
# the demo's language model (3 MB) is not used by the checks
zip -q -d "$out"/lib/kiln-cli-*.jar 'dev/kiln/cli/*.gguf' || true
cp "$root"/kiln-bench/target/kiln-bench-*.jar "$out/lib/" 2>/dev/null || true
rm -rf "$out/test-classes" && cp -r "$root/kiln-core/target/test-classes" "$out/test-classes" # a folder: some tests list resources
m2=${M2_REPO:-$HOME/.m2/repository}
for j in org/assertj/assertj-core/3.26.3/assertj-core-3.26.3.jar net/bytebuddy/byte-buddy/1.14.18/byte-buddy-1.14.18.jar \
         com/fasterxml/jackson/core/jackson-databind/2.18.12/jackson-databind-2.18.12.jar \
         com/fasterxml/jackson/core/jackson-annotations/2.18.12/jackson-annotations-2.18.12.jar \
         com/fasterxml/jackson/core/jackson-core/2.18.12/jackson-core-2.18.12.jar; do cp "$m2/$j" "$out/lib/"; done
cs=$m2/org/junit/platform/junit-platform-console-standalone/1.13.4/junit-platform-console-standalone-1.13.4.jar
[ -f "$cs" ] || "$root/mvnw" -B -ntp -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.13.4 -DoutputDirectory="$out"
cp "$cs" "$out/" 2>/dev/null || true
mkdir -p "$out/models" && cp -r "$root"/../shared/models/light_* "$out/models/"
du -sh "$out"
