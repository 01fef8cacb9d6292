"""The native HTTP API: its routes, request and response schemas, keys and limits."""
