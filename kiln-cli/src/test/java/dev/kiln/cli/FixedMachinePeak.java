package dev.kiln.cli;

import dev.kiln.runtime.MachinePeak;
import dev.kiln.runtime.MachinePeakCache;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.List;

/**
 * Gives the commands of a test class fixed figures for the machine's peak ({@link #PEAK}, as if
 * cached), so that no test measures the machine for seconds; the real lookup returns afterwards.
 */
final class FixedMachinePeak implements BeforeAllCallback, AfterAllCallback {
    static final MachinePeak PEAK = new MachinePeak(2, List.of(
            new MachinePeak.VectorPeak(256, 100, 200), new MachinePeak.VectorPeak(512, 200, 400)), 40);

    @Override
    public void beforeAll(ExtensionContext context) { PeakLookup.source = beforeMeasuring -> new MachinePeakCache.Lookup(PEAK, false); }

    @Override
    public void afterAll(ExtensionContext context) { PeakLookup.source = MachinePeakCache::lookup; }
}
