package dev.kiln.runtime;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Detects a second thread entering a run of an object that must run one execution at a time. Entry is one
 * compare-and-set of the owning thread (uncontended in correct use, so it costs nothing measurable) and exit
 * one release store. The thread that holds the guard may enter again (a run calling another run of the same
 * object, or an owner such as a {@link dev.kiln.serve.CompiledGraph} holding its plan's guard across its own
 * call); such a re-entry is one read, and only the outermost entry releases the guard.
 *
 * <pre>{@code
 * boolean acquired = guard.enter(this, "Thing.copy()");
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

    @SuppressWarnings("unused") // accessed through OWNER
    private volatile Thread owner;

    /** A free guard. */
    public RunGuard() {}

    /**
     * Takes the guard for the current thread.
     *
     * @param self the guarded object, named in the exception
     * @param replicaApi the call that gives each thread its own copy of {@code self}, named in the exception
     * @return true if this call took the guard (pass it to {@link #exit}); false if the current thread already held it
     * @throws ConcurrentUseException if another thread holds it
     */
    public boolean enter(Object self, String replicaApi) {
        Thread me = Thread.currentThread();
        if (owner == me) return false; // re-entry: one read, and the outer entry releases
        Thread was = (Thread) OWNER.compareAndExchange(this, (Thread) null, me);
        if (was == null) return true;
        throw new ConcurrentUseException(self + " is already running on thread '" + was.getName() + "' and runs one execution at a time; "
                + replicaApi);
    }

    /** Releases the guard if {@code acquired} (the value {@link #enter} returned). */
    public void exit(boolean acquired) {
        if (acquired) OWNER.setRelease(this, (Thread) null);
    }
}
