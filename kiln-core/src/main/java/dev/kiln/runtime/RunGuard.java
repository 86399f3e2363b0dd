package dev.kiln.runtime;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Detects a second thread entering a run of an object that must run one execution at a time. Entry is one
 * compare-and-set of the owning thread (uncontended in correct use, so it costs nothing measurable) and exit
 * one release store. The thread that holds the guard may enter again (a run calling another run of the same
 * object); only the outermost entry releases it.
 *
 * <pre>{@code
 * boolean acquired = guard.enter(this);
 * try { ... } finally { guard.exit(acquired); }
 * }</pre>
 */
public final class RunGuard {
    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(RunGuard.class, "owner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String replicaApi;
    @SuppressWarnings("unused") // accessed through OWNER
    private volatile Thread owner;

    /** A guard whose exception names {@code replicaApi}, the call that gives each thread its own copy. */
    public RunGuard(String replicaApi) {
        this.replicaApi = replicaApi;
    }

    /**
     * Takes the guard for the current thread.
     *
     * @param self the guarded object, named in the exception
     * @return true if this call took the guard (pass it to {@link #exit}); false if the current thread already held it
     * @throws ConcurrentUseException if another thread holds it
     */
    public boolean enter(Object self) {
        Thread me = Thread.currentThread();
        Thread was = (Thread) OWNER.compareAndExchange(this, (Thread) null, me);
        if (was == null) return true;
        if (was == me) return false; // re-entrant: the outer entry releases
        throw new ConcurrentUseException(self + " is already running on thread '" + was.getName() + "' and runs one execution at a time; "
                + "give each thread its own replica (" + replicaApi + ")");
    }

    /** Releases the guard if {@code acquired} (the value {@link #enter} returned). */
    public void exit(boolean acquired) {
        if (acquired) OWNER.setRelease(this, (Thread) null);
    }
}
