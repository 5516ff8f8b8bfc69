"""The version of burnish, in a module of its own so that any part can read it."""

__version__ = "0.1.0"
