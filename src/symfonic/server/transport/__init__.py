"""What the two HTTP transports share: one error envelope with its OpenAPI entries, and
streaming until the client goes away.
"""
