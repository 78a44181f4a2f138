"""The recording chain's response learned from the capture: the edge template (from the calibration train,
blind, from dense edges, from a period or a grid), its error, a bent input, quantization, and the noise."""
