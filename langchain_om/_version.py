"""The package version (read by hatch at build time and by ``langchain-om --version``)."""

__version__ = "0.1.0"
