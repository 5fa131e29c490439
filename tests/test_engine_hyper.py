"""LocalEngine's hyper-parameter records: one per rule family, saved under the keys every model has."""

from __future__ import annotations

import pytest

from omkl_dist.engine.hyper import OM2Hyper, OMKCHyper, SPAHyper, hyper_class, saved_scalars
from omkl_dist.engine.local import LocalEngine
from omkl_dist.engine.protocol import Rule
from omkl_dist.kernels import make_pool
from omkl_dist.scoring.program import compile_program

SAVED_KEYS = {"beta", "delta", "pa", "pa_c", "gamma", "alpha", "spa_beta", "eta", "hedge_mistake", "q", "bounded_norm"}


@pytest.mark.parametrize(
    "hyper",
    [OMKCHyper(beta=0.8, delta=0.01), SPAHyper(gamma=0.9, delta=0.2, beta=30, hedge_mistake=True), OM2Hyper(q=3)],
)
def test_a_record_saves_every_familys_keys_and_reads_back(hyper):
    scalars = saved_scalars(hyper)
    assert set(scalars) == SAVED_KEYS
    assert type(hyper).from_scalars(scalars) == hyper
    defaults = {}
    for family in (OMKCHyper, SPAHyper, OM2Hyper):
        defaults.update(family().to_scalars())
    assert scalars == {**defaults, **hyper.to_scalars()}  # the other families' keys at their defaults


def test_the_engine_takes_its_rules_record_only():
    program = compile_program(make_pool("gaussian:1;linear"))
    assert hyper_class(Rule.SPA) is SPAHyper and hyper_class(Rule.OM2) is OM2Hyper
    assert hyper_class(Rule.LEADER) is OMKCHyper
    engine = LocalEngine(program, 3, rule=Rule.SPA, seed=0, block_size=8, block_sync=False, hyper=SPAHyper(beta=4))
    arrays, scalars = engine.state()
    assert scalars["spa_beta"] == 4.0 and scalars["beta"] == 1.0 and isinstance(scalars["alpha"], float)
    assert LocalEngine.from_state(program, arrays, scalars).hyper == engine.hyper
    with pytest.raises(TypeError, match="SPAHyper"):
        LocalEngine(program, 3, rule=Rule.SPA, seed=0, block_size=8, block_sync=False, hyper=OMKCHyper())
