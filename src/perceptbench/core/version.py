"""The package version, recorded in every trial record (``run_meta.package_version``) and
``run.json``."""

__version__ = "0.1.0"
