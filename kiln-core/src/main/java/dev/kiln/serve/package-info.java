/**
 * The serving API: a {@link dev.kiln.serve.Graph} with named inputs, parameters and outputs, compiled by a
 * {@link dev.kiln.serve.Session} into a {@link dev.kiln.serve.CompiledGraph} that implements
 * {@link dev.kiln.serve.ExecutableGraph}: runs by name, by slot without allocation, typed, asynchronous
 * and pipelined; replicas for other threads; persistent handles such as a KV cache.
 */
package dev.kiln.serve;
