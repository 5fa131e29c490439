"""Combination / update rule codes: one per OMKC variant and per Perceptron baseline.

The compiled recurrences take the code as an integer and branch on it
(:func:`omkl_dist.combiners.dispatch.combined_score`).
"""

from __future__ import annotations

from numba import njit

DD, DS, SD, SS, UNIFORM, LEADER, SPA, DU, OM2 = 0, 1, 2, 3, 4, 5, 6, 7, 8
# DU: OMKC(U) of the budget-OMKC paper, every kernel updated on its own mistakes, fixed uniform vote;
# OM2: OM-2's p-norm multi-class update (not a Hedge rule: its kernel factors come from ‖θ_j‖)
VARIANTS = {("D", "D"): DD, ("D", "S"): DS, ("S", "D"): SD, ("S", "S"): SS, ("D", "U"): DU}
STOCHASTIC = (DS, SD, SS, SPA)


@njit(cache=True, nogil=True, inline="always")
def discounts_weights(rule):
    """Whether the rule's Hedge weights are discounted on mistakes (the four OMKC Hedge variants)."""
    return rule == DD or rule == DS or rule == SD or rule == SS
