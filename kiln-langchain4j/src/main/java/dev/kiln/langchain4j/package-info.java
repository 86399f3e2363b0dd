/**
 * LangChain4j's chat model interfaces over a Kiln {@link dev.kiln.llm.LanguageModel}: {@link dev.kiln.langchain4j.KilnChatModel}
 * (whole replies) and {@link dev.kiln.langchain4j.KilnStreamingChatModel} (replies streamed as they are generated).
 * Requests are checked and mapped onto Kiln's {@link dev.kiln.llm.generate.GenerationOptions} as the OpenAI-compatible
 * server ({@link dev.kiln.llm.server.KilnServer}) maps OpenAI's fields; what Kiln cannot honour is refused with
 * LangChain4j's exceptions, never ignored.
 */
package dev.kiln.langchain4j;
