"""graphmem benchmarks: recall on LoCoMo conversations and speed at scale (see README.md).

The scripts run as ``python benchmarks/recall.py`` and ``python benchmarks/speed.py``;
``from benchmarks.recall import graphmem_recall`` works from the repository root.
"""
