"""Pydantic models shared by the services and the API."""
