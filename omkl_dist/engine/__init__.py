"""Engines run an online model over a stream in blocks; :class:`LocalEngine` runs in-process."""

from .local import LocalEngine

__all__ = ["LocalEngine"]
