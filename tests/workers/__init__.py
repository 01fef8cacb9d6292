"""Worker processes the multi-process tests start, and the client that drives them."""
