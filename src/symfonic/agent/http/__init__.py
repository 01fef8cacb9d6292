"""What the two HTTP transports (the native API and AG-UI) share: one error
envelope with its OpenAPI entries, and streaming until the client goes away."""
