package dev.kiln.runtime;

/** How data moves between two devices ({@link UnifiedExecutor#syncStrategy}). */
public enum SyncStrategy {
    /** Source and destination are the same device: one copy on its copy queue. */
    LOCAL_COPY,
    /** Two devices of the same kind: one direct copy on the destination's copy queue. */
    PEER_TO_PEER,
    /** Devices of different kinds: copied out to host memory on the source, then in on the destination. */
    STAGED_HOST
}
