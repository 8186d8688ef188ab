"""``python -m benchmarks [options]``: the suite (throughput ratios against Kafka and kafka-python, and the
peak-RSS set; benchmarks/run.py). Sub-commands:

* ``python -m benchmarks memory ...``: peak RSS under each --memory budget (benchmarks/bench_memory.py);
* ``python -m benchmarks profile ...``: py-spy profiles of whole commands (benchmarks/profile.py);
* ``python -m benchmarks report ...``: the Markdown tables of a results JSON (benchmarks/report.py).
"""

import sys


def main() -> int:
    sub, rest = sys.argv[1:2], sys.argv[2:]
    if sub == ["memory"]:
        from benchmarks.bench_memory import main as memory_main

        return memory_main(rest)
    if sub == ["profile"]:
        from benchmarks.profile import main as profile_main

        return profile_main(rest)
    if sub == ["report"]:
        from benchmarks.report import main as report_main

        return report_main(rest)
    from benchmarks.run import main as run_main

    return run_main(sys.argv[1:])


sys.exit(main())
