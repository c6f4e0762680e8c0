"""Memory that learns: long-term records extracted from conversations by a model, consolidated against what
is already known on the bitemporal model, and written as records (AgentCore's, searchable by this API) and
as facts of the knowledge graph.

- :mod:`~agentmem.extraction.config`: an app's memory (strategies, triggers, budget) and who owns it;
- :mod:`~agentmem.extraction.prompts`: what each strategy asks, and the answers it accepts;
- :mod:`~agentmem.extraction.consolidation`: add, update or nothing, as a pure function;
- :mod:`~agentmem.extraction.work`: pending work, cursors and parked jobs in the table;
- :mod:`~agentmem.extraction.sinks`: where records go (the AgentCore package implements it);
- :mod:`~agentmem.extraction.service`: one session's extraction, step by step;
- :mod:`~agentmem.extraction.model_calls`: what a batch asks the model, and the records it learns;
- :mod:`~agentmem.extraction.session_messages`: what a step reads of a session;
- :mod:`~agentmem.extraction.accounting`: the usage, budget and model state the calls are counted in;
- :mod:`~agentmem.extraction.runner`: who runs the steps (the stream function in the cloud, a background
  thread locally).

Nothing in memory, graph, search, vectors or stores imports this package.
"""
