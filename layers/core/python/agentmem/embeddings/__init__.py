"""The Embedder port and its adapters (Bedrock Titan v2, a local offline model, hashing for tests)."""
