"""Combiners of per-kernel classifiers: how the kernels' scores make one prediction and how the
kernels' weights move.

* :mod:`.hedge` -- Hedge discounted on mistakes (OMKC Algorithms 1-4: deterministic or stochastic
  combination and update, ``w_k ← β w_k``);
* :mod:`.hedge_loss` -- Hedge discounted by a loss in log space (SPA, and the budget baselines'
  combiner with its replay over per-kernel outcomes, ``w_k ← γ^{ℓ_k} w_k``);
* :mod:`.uniform` -- Perceptron(u) (one Perceptron on the average kernel) and OMKC(U) (a fixed
  uniform vote);
* :mod:`.leader` -- Perceptron(*) (the kernel with the fewest mistakes predicts).

:mod:`.dispatch` is the one entry point the OMKC-family recurrences call, keyed by the rule codes of
:mod:`.codes`; :mod:`.votes` holds a classifier's vote (``sgn``, predicted class, rival class).
"""
