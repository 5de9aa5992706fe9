"""Lexical metrics (registered here once the pure functions land)."""
