"""Shared test helpers: models built in code and the official-MNN reference. Importable as `support.*`
(pyproject sets pytest `pythonpath = ["tests"]`)."""
