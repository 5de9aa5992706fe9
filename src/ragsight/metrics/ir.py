"""IR metrics on ids (registered here once the pure functions land)."""
