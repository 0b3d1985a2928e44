"""Storage backends. Each module implements the primitives of ``MemoryService``."""
