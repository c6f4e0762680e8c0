"""The REST API of API.md: one Powertools resolver, shared by Lambda and the local server."""
