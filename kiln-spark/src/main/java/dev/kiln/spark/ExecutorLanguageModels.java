package dev.kiln.spark;

import dev.kiln.llm.LanguageModel;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The language models of this JVM: one {@link LanguageModel} per model file, opened (and its graph compiled) by
 * the first task that needs it and shared by every task thread after it (a LanguageModel gives each generation its
 * own decoder over the one compiled graph). Closed by a shutdown hook, as {@link ExecutorModels}.
 */
final class ExecutorLanguageModels {
    /** An open model and the file it maps (deleted at close when it is a temporary copy). */
    private record Open(LanguageModel model, RemoteFile.Local file) {}

    private static final Map<String, Open> MODELS = new ConcurrentHashMap<>();
    private static final AtomicInteger OPENS = new AtomicInteger();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(ExecutorLanguageModels::closeAll, "kiln-spark-close-language-models"));
    }

    private ExecutorLanguageModels() {}

    /** The model in {@code file}, opened on first use (from a local copy where the file is remote). */
    static LanguageModel get(RemoteFile file) {
        return MODELS.computeIfAbsent(file.key(), k -> {
            KilnJvmOptions.requireInThisJvm(); // before copying gigabytes
            RemoteFile.Local local = file.local();
            try {
                LanguageModel m = LanguageModel.open(local.file());
                OPENS.incrementAndGet();
                return new Open(m, local);
            } catch (RuntimeException | Error e) {
                deleteIfTemporary(local);
                throw e;
            }
        }).model();
    }

    private static void deleteIfTemporary(RemoteFile.Local local) {
        if (local.temporary()) local.file().toFile().delete();
    }

    /** How many language models this JVM has opened (tests read it back from executors). */
    static int opens() { return OPENS.get(); }

    private static void closeAll() {
        for (Open o : MODELS.values()) {
            o.model().close();
            deleteIfTemporary(o.file());
        }
        MODELS.clear();
    }
}
