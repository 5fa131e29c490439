"""Progressive (prequential) evaluation and drift monitoring of a stream's mistakes."""

from .progressive import Trace, feed_calls, progressive_score

__all__ = ["Trace", "feed_calls", "progressive_score"]
