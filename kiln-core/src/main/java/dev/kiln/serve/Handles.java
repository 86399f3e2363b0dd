package dev.kiln.serve;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The handles of one compiled graph: inputs that keep their value between runs (so runs do not feed
 * them), and for each the output, if any, that is copied into it after every run.
 */
final class Handles {
    private final SharedGraphState shared;
    private final boolean[] bound;   // per input
    private final int[] feed;        // per input: the output copied into it after each run, or -1

    Handles(SharedGraphState shared) {
        this.shared = shared;
        this.bound = new boolean[shared.inputs.size()];
        this.feed = new int[shared.inputs.size()];
        Arrays.fill(feed, -1);
    }

    /** Takes the bindings and feeds of {@code other} (a replica starts as its original). */
    void copyFrom(Handles other) {
        System.arraycopy(other.bound, 0, bound, 0, bound.length);
        System.arraycopy(other.feed, 0, feed, 0, feed.length);
    }

    boolean isBound(int input) { return bound[input]; }

    int count() {
        int n = 0;
        for (boolean h : bound) if (h) n++;
        return n;
    }

    /** Checks {@code values} against input {@code name} and returns the input's index, to bind once written. */
    int toBind(String name, float[] values) {
        int i = toBind("bindHandle", name);
        TensorSpec s = shared.inputs.get(i);
        if (values.length != s.numel()) {
            throw new IllegalArgumentException("bindHandle: handle '" + name + "' has " + values.length + " values, input '" + name + "' (" + s.dtype()
                    + s.shape() + ") holds " + s.numel());
        }
        return i;
    }

    /** The index of input {@code name}, to bind once written. */
    int toBind(String op, String name) {
        Integer i = shared.inputIndex.get(name);
        if (i == null) throw new IllegalArgumentException(op + ": unknown input '" + name + "'; a handle binds an input, inputs are " + shared.inputs);
        return i;
    }

    void bind(int input) { bound[input] = true; }

    boolean has(String name) {
        Integer i = shared.inputIndex.get(name);
        return i != null && bound[i];
    }

    void setFeed(int input, int outputIndex) { feed[input] = outputIndex; }

    void clearFeed(int input) { feed[input] = -1; }

    /** After a run: copies each fed output into its handle. */
    void applyFeeds(IoBlock io) {
        for (int i = 0; i < feed.length; i++) if (feed[i] >= 0) io.feed(i, feed[i]);
    }

    /** The index of the input bound to handle {@code name}. */
    int boundHandle(String op, String name) {
        Integer i = shared.inputIndex.get(name);
        if (i == null || !bound[i]) {
            List<String> names = new ArrayList<>();
            for (int j = 0; j < bound.length; j++) if (bound[j]) names.add(shared.inputs.get(j).name());
            throw new IllegalArgumentException(op + ": no handle '" + name + "' is bound" + (i == null ? " (no such input)" : "")
                    + "; bound handles are " + names);
        }
        return i;
    }

    void checkFeed(String op, int input, int outputIndex) {
        TensorSpec h = shared.inputs.get(input);
        if (outputIndex < 0 || outputIndex >= shared.outputs.size()) {
            throw new IllegalArgumentException(op + ": output " + outputIndex + " does not exist; the graph has " + shared.outputs.size() + " outputs "
                    + shared.outputs);
        }
        TensorSpec o = shared.outputs.get(outputIndex);
        if (o.dtype() != h.dtype() || o.numel() != h.numel()) {
            throw new IllegalArgumentException(op + ": output " + outputIndex + " (" + o.dtype() + o.shape() + ") cannot feed handle '" + h.name()
                    + "' (" + h.dtype() + h.shape() + "): dtype and size must match");
        }
    }
}
