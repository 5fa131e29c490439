"""Progressive (prequential) evaluation, experiment protocols and paper-table reproduction."""

from .progressive import Trace, progressive_score

__all__ = ["Trace", "progressive_score"]
