"""OpenTelemetry: spans, metrics and their cost (issue 27)."""
