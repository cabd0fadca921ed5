"""Human-readable output: rich tables for predictions, sweeps and comparisons."""
