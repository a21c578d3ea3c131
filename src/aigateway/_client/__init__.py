"""The clients: `Client`, `AsyncClient`, their settings and what they remember."""
