"""Every file in MANIFEST.json ingests, and its rows, features, class counts, format and sha256
equal what the manifest records. One test per file, so a regression names the file."""

from __future__ import annotations

import json

import pytest

from omkl_dist.storage import dataset_info, ingest
from omkl_dist.storage.datadir import data_dir as _data_dir
from omkl_dist.storage.labels import canonical
from omkl_dist.storage.stream import load_arrays

# The manifest's format names -> ours.
FORMAT_NAMES = {"dense_ws": "dense"}
# One-class splits need their classes declared (the label map of the training split).
DECLARED = {"svmguide3/svmguide3.t.csv.gz": ["-1", "1"]}
# Large enough that each file is only a few chunks (quick writes), small enough that the big
# files span several chunks.
CHUNK_ROWS = 32_768


def _manifest_keys():
    path = _data_dir() / "MANIFEST.json"
    return sorted(json.loads(path.read_text())) if path.is_file() else ["(no datasets)"]


@pytest.fixture(scope="module")
def manifest(data_dir):
    return json.loads((data_dir / "MANIFEST.json").read_text())


@pytest.mark.data
@pytest.mark.parametrize("key", _manifest_keys())
def test_manifest_file_ingests_as_recorded(tmp_path, data_dir, manifest, key):
    entry = manifest[key]
    meta = ingest(data_dir / key, tmp_path / "ds", chunk_rows=CHUNK_ROWS, classes=DECLARED.get(key))
    assert meta == dataset_info(tmp_path / "ds")
    assert (meta["n_rows"], meta["n_features"]) == (entry["rows"], entry["features"])
    expected = {canonical(label): count for label, count in entry["class_counts"].items()}
    found = {label: count for label, count in meta["class_counts"].items() if count}
    assert found == expected
    assert meta["format"] == FORMAT_NAMES.get(entry["fmt"], entry["fmt"])
    assert meta["sha256"] == entry["sha256_gz"]
    if key in DECLARED:
        assert meta["class_counts"] == {"-1": 0, "1": entry["rows"]}


@pytest.mark.data
def test_small_file_arrays_match_labels(tmp_path, data_dir):
    """Spot-check values end to end: wdbc's stored labels are PMLB's 0/1 mapped to -1/+1."""
    ingest(data_dir / "wdbc" / "pmlb_wdbc.tsv.gz", tmp_path / "wdbc", chunk_rows=100)
    X, y, meta = load_arrays(tmp_path / "wdbc")
    assert X.shape == (569, 30) and meta["label_map"] == [["0", -1], ["1", 1]]
    assert (y == -1).sum() == 357 and (y == 1).sum() == 212
