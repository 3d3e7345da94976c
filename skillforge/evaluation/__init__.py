"""Evaluation: one case run by the agent executor (executor), the pairwise judge (judge), the comparison of a
candidate with its baseline (compare), eval sets (datasets) and the HTML report of one evaluation (report)."""
