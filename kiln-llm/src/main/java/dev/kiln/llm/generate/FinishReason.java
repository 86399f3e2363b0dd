package dev.kiln.llm.generate;

/** Why a generation ended. */
public enum FinishReason {
    /** The model produced an end-of-generation token (EOS, end of turn). */
    END_OF_TEXT,
    /** The text reached a stop string. */
    STOP_STRING,
    /** {@link GenerationOptions#maxTokens()} tokens were generated. */
    MAX_TOKENS,
    /** The sequence filled the context (with {@code maxTokens} 0, "up to the context"). */
    CONTEXT_FULL;

    /** OpenAI's name: {@code stop} for an end token or a stop string, {@code length} for a limit. */
    public String openAiName() { return this == END_OF_TEXT || this == STOP_STRING ? "stop" : "length"; }
}
