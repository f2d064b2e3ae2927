"""Generators of real MindSpore-layout dumps for the demo, the tests and the benchmarks: a residual net, noisy fp16/bf16 targets with planted bugs, several ranks."""
