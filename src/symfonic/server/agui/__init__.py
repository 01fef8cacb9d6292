"""AG-UI 1.0 for symfonic: ``POST /v1/agui`` and the agent's capabilities."""
