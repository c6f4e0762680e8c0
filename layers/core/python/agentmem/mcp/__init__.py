"""The MCP server: the memory service as Model Context Protocol tools (Streamable HTTP and stdio)."""
