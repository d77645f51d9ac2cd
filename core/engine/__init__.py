"""The call engine: what every protocol's calls go through (gate, concurrency, view, provider, cost, events)."""
