"""OpenTelemetry traces, metrics and pause logs, through the API alone: nothing is recorded
until an SDK is installed (docs/observability.md lists what is exported, and what never is).
"""
