"""Registry: listing with sha256 checks, and name / name-file / alias resolution, on a small
registry made in tmp_path and on the real datasets."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from omkl_dist.storage import DataError, list_datasets, resolve_dataset

MULTI_FILE_TRAINING = {
    "a9a": "a9a/a9a.gz",
    "svmguide1": "svmguide1/svmguide1.libsvm.gz",
    "svmguide3": "svmguide3/svmguide3.csv.gz",
    "splice": "splice/splice.train.csv.gz",
    "madelon": "madelon/madelon_train.txt.gz",
    "satimage": "satimage/satimage.mat.gz",
}


@pytest.fixture
def toy_dir(tmp_path):
    """A registry: toy (test listed first, then train), solo, a tampered file and a missing one."""
    files = {
        "toy/toy.t.gz": b"1 1:1\n",
        "toy/toy.train.csv.gz": b"1,2\n-1,3\n",
        "solo/solo.dense.txt.gz": b"1 2\n",
        "bad/bad.gz": b"1 2\n",
    }
    manifest = {}
    for key, raw in files.items():
        path = tmp_path / key
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(gzip.compress(raw))
        name = key.split("/")[0]
        role = {"toy/toy.t.gz": "test (1)", "toy/toy.train.csv.gz": "train (2)"}.get(key, "")
        manifest[key] = {
            "name": name,
            "file": key,
            "role": role,
            "rows": 1,
            "features": 1,
            "n_classes": 2,
            "class_counts": {"1": 1},
            "fmt": "libsvm",
            "sha256_gz": hashlib.sha256(path.read_bytes()).hexdigest(),
        }
    manifest["gone/gone.gz"] = dict(manifest["solo/solo.dense.txt.gz"], name="gone", file="gone/gone.gz")
    (tmp_path / "bad" / "bad.gz").write_bytes(gzip.compress(b"tampered\n"))
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    return tmp_path


def test_list_with_verification(toy_dir):
    rows = list_datasets(toy_dir)
    status = {r["file"]: r["sha256"] for r in rows}
    assert status == {
        "bad/bad.gz": "mismatch",
        "gone/gone.gz": "missing",
        "solo/solo.dense.txt.gz": "ok",
        "toy/toy.t.gz": "ok",
        "toy/toy.train.csv.gz": "ok",
    }
    toy = [r for r in rows if r["name"] == "toy"]
    assert [r["file"] for r in toy] == ["toy/toy.t.gz", "toy/toy.train.csv.gz"]
    assert [r["default"] for r in toy] == [False, True]
    for key in ("name", "file", "path", "role", "rows", "features", "classes", "class_counts", "format", "sha256"):
        assert key in rows[0]


def test_list_without_verification(toy_dir):
    status = {r["file"]: r["sha256"] for r in list_datasets(toy_dir, verify=False)}
    assert status["bad/bad.gz"] == "unchecked" and status["gone/gone.gz"] == "missing"


def test_resolve_forms(toy_dir):
    def rel(name):
        return resolve_dataset(name, data_dir=toy_dir).relative_to(toy_dir).as_posix()

    assert rel("toy") == "toy/toy.train.csv.gz"  # training split, though listed second
    assert rel("toy/toy.t.gz") == "toy/toy.t.gz"
    assert rel("toy.t") == "toy/toy.t.gz"
    assert rel("toy/toy.t") == "toy/toy.t.gz"
    assert rel("toy.train.csv") == rel("toy.train") == "toy/toy.train.csv.gz"
    assert rel("solo") == rel("solo.dense") == rel("solo.dense.txt") == "solo/solo.dense.txt.gz"


def test_existing_path_is_returned_as_is(tmp_path, toy_dir):
    own = tmp_path / "toy.t"  # same text as an alias: an existing file wins
    own.write_text("1 2\n")
    assert resolve_dataset(own, data_dir=toy_dir) == own
    assert resolve_dataset(str(own), data_dir=toy_dir) == own


def test_unknown_name_lists_close_matches(toy_dir):
    with pytest.raises(DataError, match=r"'toyy'.*close matches: 'toy'.*omkl data list"):
        resolve_dataset("toyy", data_dir=toy_dir)
    with pytest.raises(DataError, match="omkl data list") as err:
        resolve_dataset("qqqqqq", data_dir=toy_dir)
    assert "close matches" not in str(err.value)


def test_registered_but_missing_file(toy_dir):
    with pytest.raises(DataError, match="registered in MANIFEST.json but its file is missing"):
        resolve_dataset("gone", data_dir=toy_dir)


def test_no_manifest(tmp_path):
    with pytest.raises(DataError, match="no MANIFEST.json.*OMKL_DATA_DIR"):
        list_datasets(tmp_path)
    with pytest.raises(DataError, match="no such file"):
        resolve_dataset("codrna", data_dir=tmp_path)


def test_shared_alias_is_not_guessed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a data/ folder in the working directory (the README's examples make one) is a path
    manifest = {f"{n}/data.csv.gz": {"name": n, "role": "", "sha256_gz": ""} for n in ("one", "two")}
    for key in manifest:
        (tmp_path / key).parent.mkdir()
        (tmp_path / key).write_bytes(gzip.compress(b"1,2\n"))
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="'data'"):
        resolve_dataset("data", data_dir=tmp_path)
    assert resolve_dataset("two/data", data_dir=tmp_path) == tmp_path / "two" / "data.csv.gz"


# ---------------------------------------------------------------- real datasets


def test_real_registry_verifies(data_dir):
    rows = list_datasets(data_dir)
    manifest = json.loads((data_dir / "MANIFEST.json").read_text())
    assert sorted(r["file"] for r in rows) == sorted(manifest)
    assert {r["sha256"] for r in rows} == {"ok"}
    assert sum(r["default"] for r in rows) == len({e["name"] for e in manifest.values()})


@pytest.mark.parametrize("name, key", sorted(MULTI_FILE_TRAINING.items()))
def test_real_multi_file_names_resolve_to_training_split(data_dir, name, key):
    assert resolve_dataset(name, data_dir=data_dir) == data_dir / key


@pytest.mark.parametrize(
    "name, key",
    [
        ("codrna", "codrna/cod-rna.train.dense.txt.gz"),
        ("a9a.t", "a9a/a9a.t.gz"),
        ("a9a/a9a.t.gz", "a9a/a9a.t.gz"),
        ("madelon.t", "madelon/madelon.t.gz"),
        ("splice.test", "splice/splice.test.csv.gz"),
        ("pmlb_satimage", "satimage/pmlb_satimage.tsv.gz"),
        ("german.numer", "german.numer/german.mat.gz"),
    ],
)
def test_real_names_and_aliases(data_dir, name, key):
    assert resolve_dataset(name, data_dir=data_dir) == data_dir / key


def test_every_real_file_is_addressable_by_key(data_dir):
    for key in json.loads((data_dir / "MANIFEST.json").read_text()):
        assert resolve_dataset(key, data_dir=data_dir) == data_dir / key


def test_real_unknown_name(data_dir):
    with pytest.raises(DataError, match=r"'codrn'.*close matches: 'codrna'.*omkl data list"):
        resolve_dataset("codrn", data_dir=data_dir)
