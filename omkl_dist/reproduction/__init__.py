"""The papers' tables, reproduced: one module per paper, the transcribed tables in :mod:`.tables`.

- :mod:`.omkc`: the OMKC paper's Tables 3 and 4 (and the protocol, runner and flag rule the others reuse);
- :mod:`.bomkl`: the BOMKL (SPA) paper's Tables 1 and 2;
- :mod:`.mkboost`: the MKBoost paper's Tables 2 and 3, with the batch MKL baselines;
- :mod:`.oks`: the OKS paper's tables;
- :mod:`.om2`: the OM-2 paper's Figure 1 setting on the multi-class sets we have.

The decisions and substitutions behind each are in ``docs/reproduction.md``.
"""
