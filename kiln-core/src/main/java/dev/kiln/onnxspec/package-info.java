/**
 * Operator semantics that only ONNX needs, built from the public {@link dev.kiln.Tensor} API: Resize with its
 * coordinate transformation modes ({@link dev.kiln.onnxspec.Resize}), the RNN, GRU and LSTM layers in ONNX's
 * weight layouts ({@link dev.kiln.onnxspec.RecurrentLayers}), MelWeightMatrix and TfIdfVectorizer. Exported to
 * the ONNX importer only; the operators any model format wants stay on {@code Tensor}.
 */
package dev.kiln.onnxspec;
