"""Data ingestion, registry and streaming for omkl-dist.

Read a file (:func:`read_dataset`), ingest it into a chunked zarr + parquet directory
(:func:`ingest`; wide sparse data such as rcv1 in the csr layout, one CSR triple per chunk),
inspect and check it (:func:`dataset_info`, :func:`format_info`, :func:`verify_dataset`) and
stream it back in bounded memory (:func:`open_stream`). The registry (:func:`list_datasets`,
:func:`resolve_dataset`) names the real benchmark files described by ``MANIFEST.json``.
"""

from .errors import DataError
from .ingest import dataset_info, format_info, ingest, verify_dataset
from .readers import FORMATS, Dataset, column_names, detect_format, read_dataset
from .registry import list_datasets, resolve_dataset
from .stream import Stream, load_arrays, open_stream

__all__ = [
    "DataError",
    "Dataset",
    "FORMATS",
    "Stream",
    "column_names",
    "dataset_info",
    "detect_format",
    "format_info",
    "ingest",
    "list_datasets",
    "load_arrays",
    "open_stream",
    "read_dataset",
    "resolve_dataset",
    "verify_dataset",
]
