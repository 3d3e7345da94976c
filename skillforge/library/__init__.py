"""The library store: which release of each skill is live (store, SQLite), the bytes of every release (gitrepo,
gitlocks), ReleaseStateMachine as the one coordinator of both (releases, recovery), the live view (registry), owners,
and the lineage report of a skill's releases (lineage, svg)."""
