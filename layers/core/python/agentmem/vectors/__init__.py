"""The VectorIndex port and its adapters (exact search over the table, OpenSearch k-NN)."""
