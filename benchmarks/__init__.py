"""kafkatool's benchmark suite: ``python -m benchmarks`` (see BENCHMARKS.md)."""
