/**
 * Kiln LLM: language models on Kiln. Reads GGUF and safetensors files in place (memory-mapped through FFM),
 * tokenizes text with the tokenizers those files describe, and builds the Llama family as Kiln graphs.
 */
module dev.kiln.llm {
    requires transitive dev.kiln.core;
    requires com.fasterxml.jackson.databind;
    requires jinjava;
    requires jdk.incubator.vector;
    requires jdk.httpserver;

    exports dev.kiln.llm;
    exports dev.kiln.llm.gguf;
    exports dev.kiln.llm.safetensors;
    exports dev.kiln.llm.tokenizer;
    exports dev.kiln.llm.generate;
    exports dev.kiln.llm.model;
    exports dev.kiln.llm.chat;
    exports dev.kiln.llm.server;
}
