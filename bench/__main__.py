"""``make bench``: run every benchmark module in turn; each prints its own ratios."""

from __future__ import annotations

import importlib
import sys

MODULES = ["bench_cron", "bench_validate", "bench_store", "bench_scheduler", "bench_isolation",
           "bench_retention", "bench_fire_path", "bench_output", "bench_scale", "bench_serve"]


def main() -> None:
    wanted = sys.argv[1:] or MODULES
    for name in wanted:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"bench.{name}":
                print(f"== {name}: not present, skipped")
                continue
            raise
        print(f"== {name}")
        module.main()
        print()


if __name__ == "__main__":
    main()
