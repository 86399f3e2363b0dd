package dev.kiln.llm.chat;

import java.util.Objects;

/**
 * One turn of a conversation: its role ({@code "system"}, {@code "user"}, {@code "assistant"}, or whatever else the
 * model's template knows) and its text.
 */
public record ChatMessage(String role, String content) {
    public ChatMessage {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
        if (role.isEmpty()) throw new IllegalArgumentException("role: expected a name such as user, got an empty string");
    }

    /** A {@code system} message. */
    public static ChatMessage system(String content) { return new ChatMessage("system", content); }

    /** A {@code user} message. */
    public static ChatMessage user(String content) { return new ChatMessage("user", content); }

    /** An {@code assistant} message. */
    public static ChatMessage assistant(String content) { return new ChatMessage("assistant", content); }
}
