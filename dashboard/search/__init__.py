"""Search in the console: the form, the page, and the WebSocket that streams what a search finds."""
