"""The Table port and its adapters (SQLite embedded, DynamoDB cloud)."""
