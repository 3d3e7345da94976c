"""Run drivers: the checkpoint savers (checkpoint), the evolve runner (evolve), Postgres batch claims (batch), the
evaluate driver (evaluate; what a driver tells whoever runs it: watcher) and the rejudge of a stored run (rejudge),
the budget preflight and spend report (budget), Ctrl-C's stop of model calls (interrupt) and the graph-free reader
of stored runs (reader). The CLI, the notebooks and the benchmarks call these; none of them imports skillforge.cli."""
