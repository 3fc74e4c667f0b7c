"""The kiln package's version (what ``kiln.__version__`` says, and what the compiler's
fingerprint in cache keys and bundles starts with)."""

__version__ = "0.1.0"
