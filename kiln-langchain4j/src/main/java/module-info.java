/**
 * Kiln for LangChain4j: {@link dev.kiln.langchain4j.KilnChatModel} and
 * {@link dev.kiln.langchain4j.KilnStreamingChatModel}, LangChain4j's {@code ChatModel} and {@code StreamingChatModel}
 * backed by a Kiln {@link dev.kiln.llm.LanguageModel} in the same process (no server, no HTTP).
 *
 * <p>langchain4j-core has no module descriptor nor {@code Automatic-Module-Name}; its automatic module's name comes
 * from the jar's file name, {@code langchain4j.core}. It is required transitively because this module's API takes and
 * returns its types.
 */
@SuppressWarnings("requires-transitive-automatic")
module dev.kiln.langchain4j {
    requires transitive dev.kiln.llm;
    requires transitive langchain4j.core;

    exports dev.kiln.langchain4j;
}
