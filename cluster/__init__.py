"""Configuration for running omkl-dist on a Dask cluster (``dask.yaml`` beside this file)."""

from pathlib import Path

CONFIG_PATH = Path(__file__).with_name("dask.yaml")
