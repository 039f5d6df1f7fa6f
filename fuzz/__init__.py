"""Mutation fuzzing of every file family through the real commands (see fuzz/harness.py)."""
