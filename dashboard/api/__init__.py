"""The console's JSON API (django-ninja): what the pages show and what the buttons do, with an OpenAPI 3 schema."""
