package dev.kiln.llm.chat;

/** Python string methods that templates call ({@code content.strip()}), rewritten to what Kiln's Jinja evaluates. */
final class PythonMethods {
    private PythonMethods() {}

    /** The source as Kiln's Jinja should parse it: without the one trailing newline jinja2 drops ({@code keep_trailing_newline=False}). */
    static String rewrite(String source) {
        if (source.endsWith("\r\n")) return source.substring(0, source.length() - 2);
        if (source.endsWith("\n") || source.endsWith("\r")) return source.substring(0, source.length() - 1);
        return source;
    }
}
