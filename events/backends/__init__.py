"""Storage backends: each sees only bytes and envelopes (see :mod:`events.backends.base`)."""
