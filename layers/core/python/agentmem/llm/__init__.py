"""The model port (:mod:`agentmem.llm.port`) and its adapters: Amazon Bedrock's Converse API
(:mod:`agentmem.llm.bedrock`) and any OpenAI-compatible chat-completions endpoint
(:mod:`agentmem.llm.openai_compatible`). No model is the default: nothing is extracted."""
