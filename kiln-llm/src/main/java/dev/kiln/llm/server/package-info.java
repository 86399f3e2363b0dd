/**
 * {@code kiln serve}: an OpenAI-compatible HTTP server over a {@link dev.kiln.llm.LanguageModel}. The public entry is
 * {@link dev.kiln.llm.server.KilnServer} with its {@link dev.kiln.llm.server.ServerOptions}; the rest is package-private,
 * one class per concern: {@code Router} (routes, methods, the API key, the body's size), {@code Requests} (parsing and
 * checking a request with OpenAI's names and semantics), {@code Completions} (responses, whole or streamed),
 * {@code SseWriter} (server-sent events), {@code Scheduler} and {@code Job} (decode slots and the bounded queue), and
 * {@code ApiError} (OpenAI's JSON errors).
 */
package dev.kiln.llm.server;
