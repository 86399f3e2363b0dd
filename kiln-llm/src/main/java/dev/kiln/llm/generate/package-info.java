/**
 * Text generation over any {@link dev.kiln.llm.generate.Decoder}: {@link dev.kiln.llm.generate.Sampler} (greedy,
 * temperature, top-k, top-p, min-p, repetition and presence penalties, a seed), {@link dev.kiln.llm.generate.TokenStream}
 * (the generation loop as an iterator: stop tokens, stop strings, max tokens, the context, timings) and
 * {@link dev.kiln.llm.generate.GenerationPublisher} (the same as a {@link java.util.concurrent.Flow.Publisher}).
 */
package dev.kiln.llm.generate;
