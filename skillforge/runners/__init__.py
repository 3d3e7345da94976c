"""Run drivers: the checkpoint savers (checkpoint), the evolve runner (evolve), Postgres batch claims (batch), the
evaluate driver (evaluate) and the graph-free reader of stored runs (reader). The CLI and the benchmarks call these."""
