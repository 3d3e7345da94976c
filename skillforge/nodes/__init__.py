"""Graph nodes: small `(state, runtime) -> partial update` functions. Filled by the routing,
evaluation and evolution issues."""
