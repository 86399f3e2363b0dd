package dev.kiln.cuda;

/**
 * One PTX module: the output of one nvcc run over a batch of kernels, named by its SHA-256.
 *
 * @param sha256 the hash of {@code ptx} (UTF-8)
 * @param ptx    the PTX text, as {@code cuModuleLoadData} takes it (with a terminating NUL added)
 */
public record PtxModule(String sha256, String ptx) {}
