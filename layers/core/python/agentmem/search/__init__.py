"""Text analysis and ranking shared by memory search and graph search."""
