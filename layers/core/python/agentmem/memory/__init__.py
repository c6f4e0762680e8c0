"""Semantic memory: the MemoryService contract."""
