"""The one validation layer: input checks, parameter constraints, seeds and name suggestions.

- :mod:`.inputs`: :func:`check_array` (dense and ``scipy.sparse`` feature matrices), labels and
  sample weights;
- :mod:`.params`: declarative parameter constraints (:class:`Interval`, :class:`StrOptions`,
  :class:`Satisfies`), :func:`validate_params` and :func:`resolve_seed`;
- :mod:`.names`: :func:`did_you_mean` for unknown names.

It imports nothing from the rest of the package, so every layer may use it.
"""

from .inputs import (
    MAX_FEATURES,
    as_float_array,
    canonical_csr,
    check_array,
    check_feature_names,
    check_nonnegative,
    check_sample_weight,
    check_y,
    encode_labels,
    feature_names,
    user_stacklevel,
)
from .names import close_matches, did_you_mean
from .params import Interval, Satisfies, StrOptions, check_param, describe, resolve_seed, validate_params

__all__ = [
    "MAX_FEATURES",
    "as_float_array",
    "canonical_csr",
    "check_array",
    "check_feature_names",
    "check_nonnegative",
    "check_sample_weight",
    "check_y",
    "encode_labels",
    "feature_names",
    "user_stacklevel",
    "close_matches",
    "did_you_mean",
    "Interval",
    "Satisfies",
    "StrOptions",
    "check_param",
    "describe",
    "resolve_seed",
    "validate_params",
]
