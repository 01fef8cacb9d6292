"""OpenTelemetry traces, metrics and pause logs, through the API alone.

symfonic depends on ``opentelemetry-api`` only, which records nothing until an
SDK is installed and configured (``symfonic[otel]``, and ``symfonic serve``
configures it from the ``OTEL_*`` variables). Names are in :mod:`.names`; the
turn and resume spans in :mod:`.turns`; model and tool calls in :mod:`.calls`;
the traced store port in :mod:`.store`; pause logs in :mod:`.logs`.
``docs/observability.md`` lists everything exported, and what never is.
"""
