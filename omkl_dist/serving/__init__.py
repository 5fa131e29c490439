"""omkl serve: a model served over HTTP, predicting from a snapshot and learning through a write-ahead log."""
