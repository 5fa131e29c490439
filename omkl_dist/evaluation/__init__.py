"""Progressive (prequential) evaluation and drift monitoring of a stream's mistakes."""

from .progressive import Trace, progressive_score

__all__ = ["Trace", "progressive_score"]
