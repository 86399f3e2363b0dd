package dev.kiln.llm;

import dev.kiln.Tensor;
import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationPublisher;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.TokenStream;
import dev.kiln.llm.gguf.GgufFile;
import dev.kiln.llm.model.GgufWeights;
import dev.kiln.llm.model.LlamaModel;
import dev.kiln.llm.model.LlamaSpec;
import dev.kiln.llm.model.LlamaWeights;
import dev.kiln.llm.model.SafetensorsWeights;
import dev.kiln.llm.model.WeightSource;
import dev.kiln.llm.tokenizer.Tokenizer;
import dev.kiln.serve.Session;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.Flow;
import java.util.function.Consumer;

/**
 * A language model of the Llama family (Llama 2 and 3.x, Mistral, Qwen2/2.5, SmolLM) ready to generate text: its
 * weights mapped from a GGUF file or a Hugging Face folder, its tokenizer, and its graph compiled for a Kiln device.
 *
 * <pre>{@code
 * try (LanguageModel model = LanguageModel.open(Path.of("model.gguf"))) {
 *     GenerationResult r = model.generate("Once upon a time", GenerationOptions.defaults().withMaxTokens(64),
 *             token -> System.out.print(token.text()));
 *     System.out.println("\n" + r.stats());
 * }
 * }</pre>
 *
 * <p>Generations may run on several threads at once: each gets its own {@link Decoder} (KV caches) over the one
 * compiled graph. Quantised GGUF weights stay in their blocks in the mapped file; products and embedding lookups read them there (see {@link GgufWeights}).
 */
public final class LanguageModel implements AutoCloseable {
    private final ModelConfig config;
    private final Tokenizer tokenizer;
    private final WeightSource weights;
    private final LlamaModel model;
    private volatile ChatTemplate chatTemplate;

    private LanguageModel(ModelConfig config, Tokenizer tokenizer, WeightSource weights, LlamaModel model) {
        this.config = config;
        this.tokenizer = tokenizer;
        this.weights = weights;
        this.model = model;
    }

    /** {@link #open(Path, ModelOptions)} with {@link ModelOptions#defaults()}. */
    public static LanguageModel open(Path path) { return open(path, ModelOptions.defaults()); }

    /**
     * Opens a GGUF file, or a Hugging Face folder ({@code config.json}, {@code tokenizer.json}, safetensors weights),
     * and compiles its graph.
     *
     * @throws ModelFileException if the files are missing, malformed, inconsistent or of an architecture or type Kiln
     *                            does not support; the message names the file and the field or tensor
     */
    public static LanguageModel open(Path path, ModelOptions options) {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(options, "options");
        if (Files.isDirectory(path)) {
            ModelConfig config = ModelConfig.fromConfigJson(path.resolve("config.json"));
            return build(config, () -> Tokenizer.fromTokenizerJson(path.resolve("tokenizer.json")), SafetensorsWeights.open(path), options);
        }
        if (!Files.isRegularFile(path)) {
            throw new ModelFileException(path, "expected a .gguf file or a folder with config.json, tokenizer.json and safetensors weights, found nothing");
        }
        GgufFile gguf = GgufFile.open(path);
        try {
            ModelConfig config = ModelConfig.fromGguf(gguf);
            return build(config, () -> Tokenizer.fromGguf(gguf.metadata(), path), new GgufWeights(gguf), options);
        } catch (RuntimeException | Error e) {
            gguf.close();
            throw e;
        }
    }

    /**
     * The model of {@code config} over {@code weights}, compiled, with the tokenizer {@code loadTokenizer} reads. The
     * tokenizer loads on a thread of its own while the graph compiles: at a cold start each takes a few hundred
     * milliseconds of code the JIT has not compiled yet (a Llama 3 vocabulary: 128,256 tokens and 280,147 merges).
     */
    private static LanguageModel build(ModelConfig config, Callable<Tokenizer> loadTokenizer, WeightSource weights, ModelOptions options) {
        FutureTask<Tokenizer> loading = new FutureTask<>(loadTokenizer);
        Thread.ofVirtual().name("kiln-tokenizer-load").start(loading);
        LlamaModel model = null;
        LlamaSpec spec = null;
        try {
            spec = LlamaSpec.of(config, weights);
            LlamaWeights w = LlamaWeights.load(spec, weights, config.tieWordEmbeddings());
            int context = options.contextLength() > 0 ? options.contextLength()
                    : Math.min(config.maxPositionEmbeddings(), ModelOptions.DEFAULT_MAX_CONTEXT);
            int chunk = Math.min(options.prefillChunk() > 0 ? options.prefillChunk() : 256, context);
            Session session = options.device() == null ? Session.on(Tensor.defaultDevice()) : Session.on(options.device());
            model = LlamaModel.compile(spec, w, session, context, chunk, options.kvCacheType(), options.quantizedActivations());
            Tokenizer tokenizer = result(loading);
            checkVocabulary(tokenizer, spec, weights);
            return new LanguageModel(config, tokenizer, weights, model);
        } catch (RuntimeException | Error e) {
            try {
                awaitEnd(loading); // it reads the file's metadata: the file stays open until it is done
                if (model != null) model.close();
            } finally {
                weights.close();
            }
            // a vocabulary smaller than the tokenizer's shows first as a misshapen embedding: name the cause
            if (spec != null && e instanceof ModelFileException && loading.state() == Future.State.SUCCESS) {
                try {
                    checkVocabulary(loading.resultNow(), spec, weights);
                } catch (ModelFileException cause) {
                    cause.addSuppressed(e);
                    throw cause;
                }
            }
            throw e;
        }
    }

    private static void checkVocabulary(Tokenizer tokenizer, LlamaSpec spec, WeightSource weights) {
        if (tokenizer.vocabularySize() > spec.vocab()) {
            throw new ModelFileException(weights.file(), "the tokenizer has " + tokenizer.vocabularySize() + " tokens, the model's vocabulary "
                    + spec.vocab() + ": expected at most as many");
        }
    }

    /** What {@code task} returned, waiting for it; what it threw, as it threw it. */
    private static Tokenizer result(FutureTask<Tokenizer> task) {
        try {
            return task.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the tokenizer loads", e);
        } catch (ExecutionException e) {
            switch (e.getCause()) {
                case RuntimeException r -> throw r;
                case Error r -> throw r;
                case Throwable t -> throw new IllegalStateException("the tokenizer could not be loaded: " + t, t);
            }
        }
    }

    /** Waits until {@code task} has ended, however it ended, keeping an interruption for later. */
    private static void awaitEnd(FutureTask<Tokenizer> task) {
        boolean interrupted = false;
        while (true) {
            try {
                task.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) { // its failure is the caller's to report, if at all
                break;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** The model's hyperparameters. */
    public ModelConfig config() { return config; }

    /** The model's tokenizer. */
    public Tokenizer tokenizer() { return tokenizer; }

    /** The most tokens a sequence (prompt and generated text) may hold. */
    public int contextLength() { return model.contextLength(); }

    /** The compiled model (its graph, plan and kernels). */
    public LlamaModel compiled() { return model; }

    /**
     * A fresh sequence to run tokens through by hand (prefill a prompt, then one token at a time). Close it when done;
     * each open decoder holds KV caches for the whole context.
     */
    public Decoder newDecoder() { return model.newDecoder(); }

    /** Every position's logits for {@code tokens} in one forward pass (scoring), a row of vocabulary size per token. */
    public float[][] logits(int... tokens) { return model.logits(tokens); }

    /** The prompt's token ids: BOS and the like as the tokenizer adds them, control tokens written in it recognised. */
    public int[] encode(String prompt) { return tokenizer.encode(prompt, true, true); }

    /**
     * Generates a continuation of {@code prompt}, giving each step to {@code onToken} as it is made.
     *
     * @throws dev.kiln.llm.generate.ContextOverflowException if the prompt (plus a positive {@code maxTokens}) does
     *                                                        not fit the context; nothing runs then
     */
    public GenerationResult generate(String prompt, GenerationOptions options, Consumer<GeneratedToken> onToken) {
        try (TokenStream s = stream(prompt, options)) {
            return s.drain(onToken);
        }
    }

    /** {@link #generate(String, GenerationOptions, Consumer)} without streaming. */
    public GenerationResult generate(String prompt, GenerationOptions options) { return generate(prompt, options, t -> {}); }

    /** A generation continuing {@code prompt}, step by step as its iterator is read; close it if it is left unfinished. */
    public TokenStream stream(String prompt, GenerationOptions options) { return stream(encode(prompt), options); }

    /** A generation continuing the token ids {@code prompt}. */
    public TokenStream stream(int[] prompt, GenerationOptions options) {
        Decoder d = model.newDecoder();
        try {
            return new TokenStream(d, tokenizer, prompt, options);
        } catch (RuntimeException | Error e) {
            d.close();
            throw e;
        }
    }

    /**
     * The model's chat template (from its tokenizer's files), parsed once.
     *
     * @throws dev.kiln.llm.chat.ChatTemplateException if the files hold none, or it does not parse
     */
    public ChatTemplate chatTemplate() {
        ChatTemplate t = chatTemplate;
        if (t == null) chatTemplate = t = ChatTemplate.forTokenizer(tokenizer);
        return t;
    }

    /** The prompt's token ids for a conversation: the rendered template, its control tokens recognised, no BOS added (the template writes it). */
    public int[] encodeChat(ChatTemplate template, List<ChatMessage> messages) {
        return tokenizer.encode(template.render(messages, true), false, true);
    }

    /**
     * The assistant's next reply to {@code messages}, rendered with the model's {@link #chatTemplate() chat template}
     * (with {@code add_generation_prompt}), giving each step to {@code onToken} as it is made. It stops at the model's
     * end-of-turn and end-of-text tokens ({@code <|eot_id|>}, {@code <|im_end|>}, {@code </s>}) whatever
     * {@link GenerationOptions#ignoreEos()} says, at a stop string, or after {@code maxTokens}.
     *
     * @throws dev.kiln.llm.chat.ChatTemplateException if the model has no chat template, or it refuses the conversation
     *                                                 (roles out of order); nothing runs then
     * @throws dev.kiln.llm.generate.ContextOverflowException if the conversation does not fit the context
     */
    public GenerationResult chat(List<ChatMessage> messages, GenerationOptions options, Consumer<GeneratedToken> onToken) {
        return chat(chatTemplate(), messages, options, onToken);
    }

    /** {@link #chat(List, GenerationOptions, Consumer)} with the given template (e.g. {@link ChatTemplate#forTokenizer(Tokenizer, boolean)}'s ChatML fallback). */
    public GenerationResult chat(ChatTemplate template, List<ChatMessage> messages, GenerationOptions options, Consumer<GeneratedToken> onToken) {
        Objects.requireNonNull(template, "template");
        int[] prompt = encodeChat(template, messages);
        try (TokenStream s = stream(prompt, options.withIgnoreEos(false))) {
            return s.drain(onToken);
        }
    }

    /** A generation per subscriber, streamed with backpressure (see {@link GenerationPublisher}). */
    public Flow.Publisher<GeneratedToken> publisher(String prompt, GenerationOptions options) {
        int[] ids = encode(prompt);
        return new GenerationPublisher(() -> stream(ids, options));
    }

    /** Frees the compiled graphs and unmaps the weights; decoders and streams must not be used afterwards. */
    @Override
    public void close() {
        try {
            model.close();
        } finally {
            weights.close();
        }
    }

    @Override
    public String toString() {
        return "LanguageModel[" + config.modelType() + ", " + config.numHiddenLayers() + " layers, hidden " + config.hiddenSize() + ", vocab "
                + config.vocabSize() + ", context " + contextLength() + ", " + weights.file() + "]";
    }
}
