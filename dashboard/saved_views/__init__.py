"""Saved views: a search, a queue page or a failures view, saved under a name."""
