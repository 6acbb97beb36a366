"""The phases of a benchmark run, one file each (agent, generate, judge, retrieval)."""
