"""Baselines from the papers' comparisons."""
