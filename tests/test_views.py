"""Multi-view datasets: aligned view files read side by side, feature groups recorded and used."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from omkl_dist.storage import DataError, dataset_info, ingest, read_dataset
from omkl_dist.storage.views import feature_groups, is_multiview, read_views

VIEW_SIZES = {"factors": 216, "fourier": 76, "karhunen": 64, "morphological": 6, "pixel": 240, "zernike": 47}


def test_mfeat_views_side_by_side(data_dir):
    ds, groups = read_views("mfeat", data_dir=data_dir)
    assert ds.X.shape == (2000, 649) and {k: len(v) for k, v in groups.items()} == VIEW_SIZES
    fourier = read_dataset(data_dir / "mfeat" / "pmlb_mfeat_fourier.tsv.gz")
    np.testing.assert_array_equal(ds.X[:, list(groups["fourier"])], fourier.X)
    np.testing.assert_array_equal(ds.y, fourier.y)  # the pixel view's 0..9 labels are the same classes
    assert is_multiview("mfeat", data_dir=data_dir) and not is_multiview("codrna", data_dir=data_dir)


def _write(path, rows):
    with gzip.open(path, "wt") as f:
        f.write("a\tb\ttarget\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows))


def test_folder_of_views_ingested_with_groups(tmp_path):
    folder = tmp_path / "views"
    folder.mkdir()
    _write(folder / "shop_colour.tsv.gz", [(1, 2, 0), (3, 4, 1), (5, 6, 0)])
    _write(folder / "shop_shape.tsv.gz", [(7, 8, 0), (9, 10, 1), (11, 12, 0)])
    meta = ingest(folder, tmp_path / "ds", views=True)
    assert meta["feature_groups"] == {"colour": "0:2", "shape": "2:4"}
    assert feature_groups(dataset_info(tmp_path / "ds")) == {"colour": (0, 1), "shape": (2, 3)}
    _write(folder / "shop_shape.tsv.gz", [(7, 8, 1), (9, 10, 0), (11, 12, 0)])
    with pytest.raises(DataError, match="view 'shape' labels row 0 as class code"):
        read_views(folder)
    _write(folder / "shop_shape.tsv.gz", [(7, 8, 0), (9, 10, 1)])
    with pytest.raises(DataError, match="view 'shape' has 2 rows, the first view 3"):
        read_views(folder)


def test_run_on_ingested_views_uses_their_groups(tmp_path, data_dir):
    from omkl_dist.defaults import resolve_settings
    from omkl_dist.job import DataWindow, Job
    from omkl_dist.pipelines.run import run_job

    ingest("mfeat", tmp_path / "mf", views=True, data_dir=data_dir, chunk_rows=500)
    job = Job.build(
        "oks",
        {"kernels": "linear,gaussian:1 @ fourier; chi2 @ zernike"},
        data=DataWindow(str(tmp_path / "mf"), stop=600),
        block_size=128,
        seed=0,
        settings=resolve_settings(scaling="minmax", kernels_given=True),
    )
    report = run_job(job, str(tmp_path / "mf"), show_progress=False)
    assert report["selected_kernel"] in report["kernel_weights"]
    assert all("@fourier=216:292" in name or "@zernike=602:649" in name for name in report["kernel_weights"])


def test_feature_groups_from_a_column_map(tmp_path, data_dir):
    meta = ingest("ionosphere", tmp_path / "ion", feature_groups={"a": "0:17", "b": range(17, 34)}, data_dir=data_dir)
    assert meta["feature_groups"] == {"a": "0:17", "b": "17:34"}
    with pytest.raises(DataError, match="column 16 is in feature groups 'a' and 'b'"):
        ingest("ionosphere", tmp_path / "bad", feature_groups={"a": "0:17", "b": "16:34"}, data_dir=data_dir)
    with pytest.raises(DataError, match="names column 39, but the data has 34 columns"):
        ingest("ionosphere", tmp_path / "bad", feature_groups={"a": "30:40"}, data_dir=data_dir)
    assert not (tmp_path / "bad").exists()
