"""Prefect entrypoints: thin wiring over the application services in ``strata.pipeline``."""
