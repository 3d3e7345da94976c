"""The typer CLI: `main` is the console script; one module per command group."""
