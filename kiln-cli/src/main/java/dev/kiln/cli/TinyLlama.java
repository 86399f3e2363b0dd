package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The tiny Llama the demo ends with: about 3 million parameters trained offline on the docstrings of Python's standard
 * library, with a SentencePiece BPE tokenizer of 1,024 pieces, as a 3.4 MB Q8_0 GGUF file among kiln-cli's resources
 * ({@code tools/golden/train_tiny_llama.py} makes it).
 */
final class TinyLlama {
    private TinyLlama() {}

    static final String RESOURCE = "tiny-llama-q8_0.gguf";

    /**
     * Opens the model: from the resource's file when the classes are a folder, else from a temporary copy (a model is
     * mapped from a file), deleted when this JVM exits.
     */
    static LanguageModel open() { return open(ModelOptions.defaults()); }

    /** {@link #open()} with {@code options}. */
    static LanguageModel open(ModelOptions options) {
        URL url = TinyLlama.class.getResource(RESOURCE);
        if (url == null) throw new IllegalStateException("kiln-cli has no resource " + RESOURCE + " (tools/golden/train_tiny_llama.py makes it)");
        try {
            if ("file".equals(url.getProtocol())) return LanguageModel.open(Path.of(url.toURI()), options);
            Path copy = Files.createTempFile("kiln-tiny-llama-", ".gguf");
            copy.toFile().deleteOnExit();
            try (InputStream in = url.openStream()) {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
            }
            return LanguageModel.open(copy, options);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the demo's model " + url + ": " + e.getMessage(), e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException("the demo's model has no path: " + url, e);
        }
    }
}
