"""Read models."""
