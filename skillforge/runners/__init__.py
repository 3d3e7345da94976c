"""Run drivers: the checkpoint savers (checkpoint), the evolve runner (evolve), Postgres batch claims (batch), the
evaluate driver (evaluate) and the rejudge of a stored evaluation (rejudge), what they decide about budgets (budget),
how their worker threads learn of a Ctrl-C (interrupt), and the graph-free reader of stored runs (reader). The CLI and
the benchmarks call these; none of them imports skillforge.cli (tests/test_layering_cli.py)."""
