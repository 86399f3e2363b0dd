package dev.kiln.golden;

import java.util.List;

/** The devices every golden case runs on; a new device joins by adding its name here. */
final class TestDevices {
    private TestDevices() {}

    static final List<String> ALL = List.of("INTERP", "CPU");
}
