"""A WAV capture read block by block: the learning and locating passes, the span learned from, the windows
around edges, the located edges kept compactly, and the next block read ahead."""
