"""latlab's runs on a Ray cluster: one Ray task per run, merged by the same Rust code the
command line uses, so the result equals the local command's for the same draws or values.

Laptop::

    import ray, latlab.ray
    ray.init()
    report = latlab.ray.uncertainty("mini-ll", samples=64)

Cluster: start it with ``ray start --head`` (and ``ray start --address=HEAD:6379`` on the
others, each with this package installed), then ``ray.init(address="auto")`` or set
``RAY_ADDRESS``. Without a ``ray.init()`` of your own, the first call connects as
``ray.init()`` does (``RAY_ADDRESS`` if set, else a local instance).
"""

import json

import ray

from . import _latlab, _text

__all__ = ["uncertainty", "sweep"]


@ray.remote
def _uncertainty_job(name, samples, seed, job):
    from latlab import _latlab as native

    return native.uncertainty_job(name, samples, seed, job)


@ray.remote
def _sweep_job(name, key, values, job):
    from latlab import _latlab as native

    return native.sweep_job(name, key, values, job)


def _spread(job, args, jobs):
    """Every job of a plan as one Ray task, their rows in job order."""
    if not ray.is_initialized():
        ray.init()
    return ray.get([job.remote(*args, j) for j in range(jobs)])


def uncertainty(name, samples=64, seed=1, text=False):
    """``latlab uncertainty NAME --samples N --seed S --json`` with every run a Ray task.
    Returns the report as a dict, or with ``text=True`` as the JSON text the command prints
    (without its newline)."""
    args = (name, samples, seed)
    rows = _spread(_uncertainty_job, args, _latlab.uncertainty_jobs(*args))
    out = _latlab.uncertainty_merge(*args, rows)
    return out if text else json.loads(out)


def sweep(name, vary, text=False):
    """``latlab reproduce NAME --vary KEY=V1,V2,... --json`` with every run a Ray task.
    ``vary`` is ``{KEY: [V1, V2, ...]}`` (one key, as the command line takes)."""
    if len(vary) != 1:
        raise ValueError("vary takes one key, as `--vary KEY=V1,V2,...` does; got %d" % len(vary))
    ((key, values),) = vary.items()
    args = (name, key, [_text(v) for v in values])
    rows = _spread(_sweep_job, args, _latlab.sweep_jobs(*args))
    out = _latlab.sweep_merge(*args, rows)
    return out if text else json.loads(out)
