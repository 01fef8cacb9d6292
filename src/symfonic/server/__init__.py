"""The HTTP server over the agents: the native API, the inbox, AG-UI, and the service they share."""
