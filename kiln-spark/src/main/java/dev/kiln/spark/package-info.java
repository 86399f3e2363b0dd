/**
 * Kiln models on Spark DataFrames: {@link dev.kiln.spark.KilnModel}, a Spark ML Transformer scoring an ONNX model in
 * batches, and {@link dev.kiln.spark.KilnFunctions}, SQL functions ({@code kiln_predict} over an ONNX model,
 * {@code kiln_generate} over a kiln-llm language model, greedy or sampled with OpenAI's parameters and a per-row seed
 * derived from the prompt) whose calls {@link dev.kiln.spark.KilnSparkExtensions} checks
 * when a query is analysed. Each executor JVM compiles a model once and shares it among its task threads; every
 * mismatch between a DataFrame and a model that a schema can show fails before any task runs, and a bad row fails its
 * task by position or, with {@code handleInvalid = keep}, gets null outputs.
 *
 * <p>Spark is {@code provided}: the cluster's own Spark 4.2 (Scala 2.13) is used. The package runs on the class path
 * (Spark's jars are not named modules), and every JVM that runs Kiln needs
 * {@code --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED} (the driver's options and
 * {@code spark.executor.extraJavaOptions}).
 */
package dev.kiln.spark;
