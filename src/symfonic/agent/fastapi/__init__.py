"""The HTTP transport's shared pieces."""
