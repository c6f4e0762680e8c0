"""The web console (docs/console.md): static files in this folder, served at ``/console`` with the API.

The page calls the public REST API only, from the same origin, with the user's API key; nothing here
reads the stores. :mod:`agentmem.console.assets` serves the files (the local server and the cloud's
console function, ``functions/console``).
"""
