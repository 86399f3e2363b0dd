package dev.kiln.ir;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A logger that says each message once per process: where Kiln takes a slower path it says why, once, not on every
 * call that takes it again.
 */
public final class OnceLog {
    private final System.Logger log;
    private final Set<String> said = ConcurrentHashMap.newKeySet();

    /** Messages under {@code owner}'s name. */
    public OnceLog(Class<?> owner) { this.log = System.getLogger(owner.getName()); }

    /** Logs {@code message} at INFO the first time it is given. */
    public void info(String message) { log(System.Logger.Level.INFO, message); }

    /** Logs {@code message} at WARNING the first time it is given. */
    public void warning(String message) { log(System.Logger.Level.WARNING, message); }

    private void log(System.Logger.Level level, String message) {
        if (said.add(message)) log.log(level, message);
    }
}
