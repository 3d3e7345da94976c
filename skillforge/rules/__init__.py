"""Pure decision rules: data in, verdict out, no I/O, thresholds as code constants."""
