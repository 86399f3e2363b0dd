package dev.kiln.onnxspec;

import dev.kiln.Tensor;

/**
 * The outputs of {@link RecurrentLayers#rnn}, {@link RecurrentLayers#gru} and {@link RecurrentLayers#lstm}: all hidden states {@code y}
 * (seq, dirs, batch, hidden), the last hidden state {@code yH} (dirs, batch, hidden) and, for LSTM,
 * the last cell state {@code yC} (same shape; null otherwise). With layout 1 they are
 * (batch, seq, dirs, hidden) and (batch, dirs, hidden).
 */
public record RecurrentOutputs(Tensor y, Tensor yH, Tensor yC) {}
