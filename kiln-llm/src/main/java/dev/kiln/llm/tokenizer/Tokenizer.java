package dev.kiln.llm.tokenizer;

import dev.kiln.llm.ModelFileException;

import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A language model's tokenizer: text to token ids and back. Two families are supported, each loaded from GGUF
 * metadata or a Hugging Face {@code tokenizer.json}:
 * <ul>
 *   <li>SentencePiece-style BPE (Llama 2, Mistral): spaces become "▁", pieces merge by score, characters outside
 *       the vocabulary fall back to {@code <0xXX>} byte tokens;</li>
 *   <li>byte-level BPE (Llama 3, Qwen2/2.5, SmolLM, GPT-2): a pre-tokenizer regex cuts the text into words, whose
 *       UTF-8 bytes merge by rank.</li>
 * </ul>
 * Encoding follows llama.cpp for GGUF files and Hugging Face {@code tokenizers} for {@code tokenizer.json}; the tests
 * compare both token for token with sentencepiece and {@code tokenizers}. Instances are immutable and thread-safe.
 */
public final class Tokenizer {
    private final Vocabulary vocab;
    private final SpecialSplitter splitter;
    private final Pipeline pipeline;
    private final int[] prefix;
    private final int[] suffix;
    private final String chatTemplate;

    Tokenizer(Vocabulary vocab, SpecialSplitter splitter, Pipeline pipeline, int[] prefix, int[] suffix,
              String chatTemplate) {
        this.vocab = vocab;
        this.splitter = splitter;
        this.pipeline = pipeline;
        this.prefix = prefix.clone();
        this.suffix = suffix.clone();
        this.chatTemplate = chatTemplate;
    }

    /**
     * The tokenizer a GGUF file's metadata describes, with llama.cpp's key names ({@code tokenizer.ggml.model},
     * {@code .pre}, {@code .tokens}, {@code .scores}, {@code .token_type}, {@code .merges}, the special ids,
     * {@code .add_bos_token}, {@code .add_eos_token}, {@code .add_space_prefix}, {@code tokenizer.chat_template}),
     * valued as the GGUF reader maps them: strings as {@link String}, integers as {@link Long}, floats as
     * {@link Double}, booleans as {@link Boolean}, arrays as {@link java.util.List}.
     *
     * @param file the GGUF file, named in errors
     * @throws ModelFileException if a key is missing, of the wrong type, inconsistent or unsupported
     */
    public static Tokenizer fromGguf(Map<String, ?> metadata, Path file) {
        return GgufTokenizerLoader.load(Objects.requireNonNull(metadata, "metadata"), Objects.requireNonNull(file, "file"));
    }

    /** {@link #fromGguf(Map, Path)} for metadata that did not come from a named file. */
    public static Tokenizer fromGguf(Map<String, ?> metadata) {
        return fromGguf(metadata, Path.of("gguf-metadata"));
    }

    /**
     * The tokenizer a Hugging Face {@code tokenizer.json} describes (BPE models; the normalizers, pre-tokenizers,
     * post-processors and decoders Llama, Mistral, Qwen2, SmolLM and GPT-2 use), with the special tokens, BOS/EOS
     * flags and chat template of a {@code tokenizer_config.json} in the same folder, if there is one.
     *
     * @throws ModelFileException if a file cannot be read or parsed, or uses something unsupported
     */
    public static Tokenizer fromTokenizerJson(Path tokenizerJson) {
        return HfTokenizerLoader.load(Objects.requireNonNull(tokenizerJson, "tokenizerJson"));
    }

    /**
     * The ids of {@code text}.
     *
     * @param addSpecial   add the tokens the file asks for around every text: BOS where {@code add_bos_token} (or
     *                     the {@code tokenizer.json} post-processor) says so, EOS where {@code add_eos_token} does
     * @param parseSpecial recognise control tokens written in the text ({@code <|eot_id|>}, {@code </s>}); without
     *                     it they are plain text. Added tokens that are not special are always recognised.
     */
    public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        Objects.requireNonNull(text, "text");
        Ints out = new Ints();
        if (addSpecial) out.addAll(prefix);
        for (SpecialSplitter.Segment segment : splitter.split(text, parseSpecial)) {
            switch (segment) {
                case SpecialSplitter.Segment.Token t -> out.add(t.id());
                case SpecialSplitter.Segment.Text t -> pipeline.encode(t.text(), t.atStart(), out);
            }
        }
        if (addSpecial) out.addAll(suffix);
        return out.toArray();
    }

    /** The text of {@code ids}, leaving special tokens out ({@code decode(ids, false)}). */
    public String decode(int[] ids) {
        return decode(ids, false);
    }

    /**
     * The text of {@code ids}. Control and unknown tokens are left out unless {@code renderSpecial}, when they appear
     * as their text. The space a SentencePiece encoder put before the text is taken off the first piece; bytes that
     * form no character become U+FFFD.
     *
     * @throws IllegalArgumentException if an id is not in the vocabulary
     */
    public String decode(int[] ids, boolean renderSpecial) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean atStart = true;
        for (int id : ids) {
            byte[] piece = pieceBytes(id, renderSpecial);
            if (piece == null) continue;
            int from = atStart ? leadingSpaceToStrip(piece) : 0;
            atStart = false;
            bytes.write(piece, from, piece.length - from);
        }
        byte[] all = bytes.toByteArray();
        return Utf8.decode(all, 0, all.length);
    }

    /** A streaming decoder for ids that begin a text; see {@link TokenDecoder}. */
    public TokenDecoder newDecoder(boolean renderSpecial) {
        return new TokenDecoder(this, renderSpecial, false);
    }

    /**
     * A streaming decoder for ids that continue a text when {@code continuing} (a generation after a prompt): the first
     * id's leading space, which {@link #decode} strips at the start of a text (SentencePiece's dummy prefix), is kept, so
     * "Return a new" continues with " file", not "file".
     */
    public TokenDecoder newDecoder(boolean renderSpecial, boolean continuing) {
        return new TokenDecoder(this, renderSpecial, continuing);
    }

    /** The number of token ids, {@code 0..vocabularySize()-1}. */
    public int vocabularySize() { return vocab.size(); }

    /** The special token ids. */
    public SpecialTokens specialTokens() { return vocab.special(); }

    /** Whether {@code id} is a control or unknown token, which {@link #decode(int[])} leaves out. */
    public boolean isSpecial(int id) {
        TokenType type = tokenType(id);
        return type == TokenType.CONTROL || type == TokenType.UNKNOWN;
    }

    /** Whether generation stops at {@code id}: EOS, end of turn, end of message and tokens named like them. */
    public boolean isEndOfGeneration(int id) {
        checkId(id);
        return vocab.isEndOfGeneration(id);
    }

    /** The vocabulary's text for {@code id}, as stored ("▁the", "Ġthe", "{@code <0x0A>}", "{@code <s>}"). */
    public String tokenText(int id) {
        checkId(id);
        return vocab.text(id);
    }

    /** The type of {@code id}. */
    public TokenType tokenType(int id) {
        checkId(id);
        return vocab.type(id);
    }

    /** The model's chat template (Jinja source, as GGUF and Hugging Face store it), if the files have one. */
    public Optional<String> chatTemplate() { return Optional.ofNullable(chatTemplate); }

    /** The steps text segments go through (for tests of the pre-tokenizers). */
    Pipeline pipeline() { return pipeline; }

    /** The bytes {@code id} decodes to, or {@code null} if it is special and not rendered. */
    byte[] pieceBytes(int id, boolean renderSpecial) {
        checkId(id);
        if (!renderSpecial && isSpecial(id)) return null;
        return vocab.piece(id);
    }

    /** 1 if {@code firstPiece} starts with the space a SentencePiece encoder prefixed, else 0. */
    int leadingSpaceToStrip(byte[] firstPiece) {
        return vocab.decoding().stripLeadingSpace() && firstPiece.length > 0 && firstPiece[0] == ' ' ? 1 : 0;
    }

    private void checkId(int id) {
        if (id < 0 || id >= vocab.size()) {
            throw new IllegalArgumentException("token id " + id + " is outside the vocabulary of " + vocab.size());
        }
    }
}
