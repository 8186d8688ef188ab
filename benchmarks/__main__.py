import sys

# ``python -m benchmarks memory [options]``: the memory-budget benchmark (benchmarks/bench_memory.py);
# anything else: the throughput ratios against the peers (benchmarks/run.py).
if sys.argv[1:2] == ["memory"]:
    from benchmarks.bench_memory import main as memory_main

    sys.exit(memory_main(sys.argv[2:]))

from benchmarks.run import main

sys.exit(main())
