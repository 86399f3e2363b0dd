package dev.kiln.llm.generate;

/**
 * One step of a generation, as streamed.
 *
 * @param id     the token chosen
 * @param text   the text that became final with it: empty while a character is unfinished or while the text's end
 *               might still become a stop string, and then possibly several tokens' worth at once. Concatenated, the
 *               texts are the generation's text
 * @param finish why the generation ended, on its last step; null before. The last step of an
 *               {@link FinishReason#END_OF_TEXT} generation is the end token itself, carrying any held-back text
 */
public record GeneratedToken(int id, String text, FinishReason finish) {
    public GeneratedToken {
        java.util.Objects.requireNonNull(text, "text");
    }

    /** Whether this is the generation's last step. */
    public boolean isLast() { return finish != null; }
}
