package dev.kiln.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * A one-line progress indicator on the error stream for work that may take more than a second:
 * nothing is drawn during the first second, then a spinner (or, once {@link #update} gave a total, a
 * bar) with the elapsed time, redrawn in place ten times a second and erased on {@link #close()}. It
 * never writes to standard output, so piped results stay clean.
 */
final class Progress implements AutoCloseable {
    static final long DELAY_NANOS = 1_000_000_000L;
    private static final long PERIOD_MILLIS = 100;
    private static final String SPIN = "|/-\\";
    private static final int BAR = 24;

    private final String label;
    private final PrintWriter err;
    private final long start = System.nanoTime();
    private final Thread thread;
    private volatile long done;
    private volatile long total;
    private int frame;
    private int drawnWidth;  // characters on the line now; guarded by this
    private boolean closed;  // guarded by this

    private Progress(String label, PrintWriter err, boolean enabled) {
        this.label = label;
        this.err = err;
        this.thread = enabled ? Thread.ofPlatform().daemon().name("kiln-progress").start(this::loop) : null;
    }

    /** Starts a progress line for {@code label}; a disabled one only counts. */
    static Progress start(String label, PrintWriter err, boolean enabled) { return new Progress(label, err, enabled); }

    /** Whether the process has a terminal (so redrawing a line in place makes sense). */
    static boolean terminalAttached() {
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }

    /** Reports {@code done} of {@code total} steps; the line shows a bar from now on. */
    void update(long done, long total) {
        this.done = done;
        this.total = total;
    }

    private void loop() {
        try {
            Thread.sleep(DELAY_NANOS / 1_000_000);
            while (draw()) Thread.sleep(PERIOD_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private synchronized boolean draw() {
        if (closed) return false;
        String line = render(System.nanoTime() - start);
        err.print("\r" + line + " ".repeat(Math.max(0, drawnWidth - line.length())));
        err.flush();
        drawnWidth = line.length();
        return true;
    }

    /** The line for the current state after {@code elapsedNanos}. */
    String render(long elapsedNanos) {
        String time = String.format(Locale.ROOT, "%.1f s", elapsedNanos / 1e9);
        long t = total, d = Math.min(done, t);
        if (t > 0) {
            int filled = (int) (BAR * d / t);
            return String.format(Locale.ROOT, "%s [%s%s] %d/%d  %s", label, "#".repeat(filled), " ".repeat(BAR - filled), d, t, time);
        }
        return SPIN.charAt(frame++ % SPIN.length()) + " " + label + "  " + time;
    }

    /** Stops drawing and erases the line. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (drawnWidth > 0) {
                err.print("\r" + " ".repeat(drawnWidth) + "\r");
                err.flush();
                drawnWidth = 0;
            }
        }
        if (thread != null) thread.interrupt();
    }

    /** Whether anything has been drawn and not yet erased (for tests). */
    synchronized boolean visible() { return drawnWidth > 0; }
}
