"""latlab's kernel model from Python.

Every function returns what the ``latlab`` command line prints or writes, as Python
objects (the same JSON, decoded):

- ``run(experiment_text, overrides={...}, seed=1)``: the full result of every run of an
  experiment file's text, by run label (``latlab run FILE --out DIR`` writes each);
- ``reproduce(name, progress=print)``: ``latlab reproduce NAME --json``, ``progress``
  called as each run ends;
- ``uncertainty(name, samples=64, seed=1)``: ``latlab uncertainty NAME --json``, run on
  this machine's cores;
- ``latlab.ray.uncertainty`` / ``latlab.ray.sweep``: the same spread over a Ray cluster.
"""

import json

from . import _latlab

__version__ = _latlab.__version__

__all__ = ["run", "reproduce", "uncertainty", "experiments"]


def _overrides(overrides):
    return [(str(k), _text(v)) for k, v in (overrides or {}).items()]


def _text(v):
    """A value as ``--vary`` reads it (``True`` as ``true``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def run(experiment_text, overrides=None, seed=None, progress=None):
    """Run an experiment given as TOML text (docs/experiments.md), with ``overrides`` (any
    ``--vary`` key: ``{"machine.cpu_mhz": 500, "catalog.unfile.misses": 3}``) and an
    optional PRNG seed. Returns ``{label: RunResult}``, each as ``--out`` writes it.
    ``progress``: as ``reproduce``'s."""
    return json.loads(_latlab.run(experiment_text, _overrides(overrides), seed, progress))


def reproduce(name, progress=None):
    """``latlab reproduce NAME --json``: ``{"experiment": NAME, "seed": "000", "rows": [...],
    "summary": {...}}``. Each row is one figure of one run (``run``, its label) with its
    verdicts: ``bar`` (how close the model must come to the published figure, e.g.
    ``{"within": 1.5}``), ``inside`` (the model's figure inside that bar; ``None`` where the
    seed published nothing to judge) and ``published_in_band`` (the published figure inside
    the model's stored uncertainty band). ``summary`` counts them: ``judged``, ``inside``,
    ``banded``, ``published_in_band``, as the table's "N of M published figures inside the
    bar" line says them.

    ``progress``, if given, is called as each run ends (from the thread that called
    ``reproduce``'s pool, holding the GIL) with a dict: ``experiment``, ``run`` (its
    label), ``done`` and ``runs`` (how many of how many have ended), ``simulated_s`` and
    ``elapsed_s``. ``progress=print`` shows them; an exception it raises stops the runs
    still going and is raised by ``reproduce``."""
    return json.loads(_latlab.reproduce(name, progress))


def uncertainty(name, samples=64, seed=1):
    """``latlab uncertainty NAME --samples N --seed S --json``, on this machine's cores."""
    return json.loads(_latlab.uncertainty(name, samples, seed))


def experiments():
    """The built-in experiments' names."""
    return list(_latlab.experiments())
