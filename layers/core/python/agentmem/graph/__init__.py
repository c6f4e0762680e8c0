"""The bitemporal knowledge-graph memory (SPEC section 2)."""
