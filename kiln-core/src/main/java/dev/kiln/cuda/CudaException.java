package dev.kiln.cuda;

/**
 * A CUDA driver call failed: the message names the call and the driver's error
 * ({@code CUDA_ERROR_OUT_OF_MEMORY (2)}); {@link #result()} is the {@code CUresult}, or -1 when the
 * driver could not be reached at all.
 */
public final class CudaException extends RuntimeException {
    private final int result;

    CudaException(String message, int result) {
        super(message);
        this.result = result;
    }

    /** The driver's {@code CUresult}, or -1 when there was no driver call to fail. */
    public int result() { return result; }
}
