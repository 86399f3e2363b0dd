package dev.kiln.llm.chat;

/**
 * A chat template could not be used: the model has none, its source does not parse, it needs a feature Kiln's Jinja
 * does not have, or it refused the conversation itself ({@code raise_exception}, e.g. roles out of order). The
 * message is fit to show a user as is; {@link #kind()} tells the cases apart. It is an {@link IllegalArgumentException}:
 * the model's files or the conversation are at fault, not Kiln.
 */
public class ChatTemplateException extends IllegalArgumentException {
    /** Why the template could not be used. */
    public enum Kind {
        /** The model's files hold no chat template (and no fallback was asked for). */
        MISSING,
        /** The template's source does not parse as Jinja. */
        SYNTAX,
        /** The template uses a feature (a filter, test, function or tag) that is not supported. */
        UNSUPPORTED,
        /** The template called {@code raise_exception(message)}: it refuses this conversation. */
        RAISED,
        /** Rendering failed otherwise (an expression went wrong on these messages). */
        RENDER
    }

    @java.io.Serial
    private static final long serialVersionUID = 1L;

    private final Kind kind;

    public ChatTemplateException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public ChatTemplateException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    /** Why the template could not be used. */
    public Kind kind() { return kind; }
}
