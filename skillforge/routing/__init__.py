"""Routing services: embedders and the vector cache (embedding), the route index (index), the scoring
head (head), `route fit` (fit) and `route eval` summaries (eval). The route graph lives in graphs/."""
