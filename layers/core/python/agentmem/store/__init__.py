"""A key-value store of JSON documents addressed by (namespace, key) for each user, on top of memory.

The shape LangGraph's ``BaseStore`` asks for (``agentmem.langgraph``). Each item is a memory entry like
any other (searched, exported, metered, erased with the user) plus a key row that addresses it.
"""
