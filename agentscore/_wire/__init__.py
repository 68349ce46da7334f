"""Private plumbing for what crosses the wire: HTTP clients and OTLP in and out."""
