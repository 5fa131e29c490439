"""The measured studies behind the package's defaults and reproduction notes.

``omkl study defaults`` (issue 23, item 2): every online algorithm runs test-then-train over every
classification dataset of the registry (and two generated ones) with each feature scaling (none, minmax,
standard) and with its kernels raw and normalised, k(x,x')/sqrt(k(x,x) k(x',x')): six combinations,
each measured as the online mistake rate over several permutations, and timed. The question it answers:
which combination should be the default, by how much it wins, and where it loses. Its modules, in the
order a study uses them:

- ``defaults_plan``: the settings, the algorithms and their kernels, the grid of runs;
- ``defaults_data``: the datasets (registry files chosen by a stated rule, two generated stand-ins)
  and each run's permuted, scaled stream;
- ``defaults_records``: the JSONL of finished runs, one line per run appended as it finishes, so an
  interrupted study resumes where it stopped and a rerun only adds what is missing;
- ``defaults_run``: one run, the missing runs in worker processes, and the command itself;
- ``defaults_report``: the report, a pure function of the records (``build_report``), written as
  Markdown (``defaults_markdown``) and a JSON summary beside the records; ``omkl study defaults
  --report-only --results FILE`` regenerates it;
- ``defaults_compare``: two studies side by side (``--compare``): the whole streams (``--max-rows all``,
  issue 35) against the 3,000-row cap that chose the defaults, and the rows where their winners differ --
  ``docs/defaults.md`` for the project's study (``make study-defaults``).

Beside the six combinations a study can vary the other defaults, one at a time (``--axes``: SPA's Hedge
loss, the budget, the kernel pool), and every run records its cumulative mistakes at fixed prefixes of
its stream, so that a rule deciding on a stream's head can be evaluated offline from the same runs.

``susy``: what the 30,000-row SUSY substitute does to SPA's row of the BOMKL paper's Table 2
(``python -m omkl_dist.pipelines.studies.susy``).
"""
