"""Date and time columns: a cell such as ``2026-01-31 08:15`` is no number, and no category either --
one-hot encoding a timestamp makes a column per distinct instant -- so the errors about such a
column say to leave it out or to make numbers of it."""

from __future__ import annotations

import re

# a date or a time as spreadsheets and pandas write them: 2026-01-31, 2026-01-31 08:15:00, 2026-01-31T08:15Z,
# 31/01/2026, 31.01.26 8:15, 08:15:30
_DATE_OR_TIME = re.compile(
    rb"(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?"
    rb"|\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?"
)
DATE_FIX = (
    "a date is no number and no category to encode: leave it out ({leave}), or add numbers made from it "
    "(its hour, weekday, days since a date) as columns of their own"
)


def date_or_time(value: bytes | str) -> bool:
    """A cell that holds a date or a time of day (:data:`_DATE_OR_TIME`)."""
    return _DATE_OR_TIME.fullmatch(value.encode() if isinstance(value, str) else value) is not None
