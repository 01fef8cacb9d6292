"""A turn's lifecycle, one step per module, below every agent and transport;
docs/architecture.md lists the steps in order.
"""
