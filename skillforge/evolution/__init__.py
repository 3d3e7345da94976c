"""Domain services of the evolve graph: patch application (patch); harvest, analysis and proposal follow."""
