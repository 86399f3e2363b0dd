package dev.kiln.llm.generate;

import java.util.List;

/**
 * Finds stop strings in streamed text. Text is released as soon as it can no longer be part of a stop string: the
 * longest end of the pending text that begins some stop string is held back until later text settles it. Not
 * thread-safe: one per generation.
 */
final class StopStrings {
    private final List<String> stops;
    private final StringBuilder pending = new StringBuilder();
    private boolean stopped;

    StopStrings(List<String> stops) { this.stops = List.copyOf(stops); }

    /** Takes {@code text}; returns the text now safe to release (before a stop string, once one is found). */
    String offer(String text) {
        if (stopped) return "";
        pending.append(text);
        int at = firstStop();
        if (at >= 0) {
            stopped = true;
            String out = pending.substring(0, at);
            pending.setLength(0);
            return out;
        }
        int keep = heldBack();
        String out = pending.substring(0, pending.length() - keep);
        pending.delete(0, pending.length() - keep);
        return out;
    }

    /** Whether a stop string was found. */
    boolean stopped() { return stopped; }

    /** The held-back text, released because generation ended without a stop string. */
    String flush() {
        String out = pending.toString();
        pending.setLength(0);
        return out;
    }

    private int firstStop() {
        int best = -1;
        for (String s : stops) {
            int i = pending.indexOf(s);
            if (i >= 0 && (best < 0 || i < best)) best = i;
        }
        return best;
    }

    /** The length of the longest end of the pending text that is a proper prefix of a stop string. */
    private int heldBack() {
        int best = 0, n = pending.length();
        String text = pending.toString();
        for (String s : stops) {
            for (int len = Math.min(s.length() - 1, n); len > best; len--) {
                if (text.regionMatches(n - len, s, 0, len)) {
                    best = len;
                    break;
                }
            }
        }
        return best;
    }
}
