"""Orrery from Python: the same runs as the `orrery` command line, results as dicts.

    >>> import orrery
    >>> r = orrery.step("examples/scenarios/llama3-70b-h100-64.json")
    >>> r["mfu"], r["step_time_s"]

A scenario (or a plan) is a path or a dict; a dict's relative paths resolve against the current
directory. Results are the command's JSON report (`--report`) as a dict, exact values. Outputs
(timelines, HTML pages, CSVs) are written to the paths given. Bad input raises `orrery.InputError`
with the command line's one-line message (file, JSON pointer or line, what was found and expected).
Long runs call `progress(update)` with a dict: label, done, total, unit, elapsed_s, eta_s, note,
last, text.
"""

from . import _orrery

InputError = _orrery.InputError

__all__ = ["InputError", "step", "estimate", "compare", "cluster", "collective", "sweep", "plan", "replay", "topology", "gpus", "cost",
           "calibrate_measure", "calibrate_fit", "doclens", "validate", "policies"]


def step(scenario=None, *, estimate=False, gpus=None, trace=None, html=None, report=None, train_tokens="", no_reuse=False,
         progress=None):
    """One training step (`orrery step`); None: the built-in default scenario."""
    return _orrery.step("" if scenario is None else scenario, estimate, gpus, trace, html, report, train_tokens, no_reuse, progress)


def estimate(scenario=None, *, gpus=None, report=None, train_tokens=""):
    """The closed-form step estimate (`orrery step --estimate`)."""
    return step(scenario, estimate=True, gpus=gpus, report=report, train_tokens=train_tokens)


def compare(scenario, *, policies="", steps=200, iterations=50, gpus=None, jobs=None, skip_bad_rows=False, trace=None, trace_step=0,
            html=None, report=None, progress=None):
    """Policies on one workload (`orrery compare`): sequence, pipeline, cluster or RL policies,
    by the scenario's kind. `policies` is comma-separated, each `name[:key=value;...]`."""
    return _orrery.compare(scenario, policies, steps, iterations, gpus, jobs, skip_bad_rows, trace, trace_step, html, report, progress)


def cluster(scenario, *, policy="fifo", jobs=None, skip_bad_rows=False, timeline=None, csv=None, html=None, report=None, progress=None):
    """A job trace replayed on a cluster under one scheduler (`orrery cluster`)."""
    return _orrery.cluster(scenario, policy, jobs, skip_bad_rows, timeline, csv, html, report, progress)


def collective(*, topology="dgx-h100", op="all-reduce", algo="auto", proto="auto", nvls=True, size="1 GiB", ranks=0, channels=-1, chunks=1,
               root=0, peer=1, alltoallv=None, quantum="0", trace=None, report=None):
    """One collective simulated on a fabric (`orrery collective`); algo "auto" is NCCL's choice."""
    return _orrery.collective(topology, op, algo, proto, nvls, str(size), ranks, channels, chunks, root, peer, alltoallv, quantum, trace,
                              report)


def sweep(plan, *, out=None, csv=None, html=None, jobs=0, resume=False, max_points=0, frame=False, progress=None):
    """A sweep (`orrery sweep`): the results' rows as a list of dicts, or with frame=True as a
    pandas DataFrame (columns in the CSV's order). `out` (results JSON) defaults to a temporary
    file, the CSV beside it."""
    if out is None:
        import os
        import tempfile
        with tempfile.TemporaryDirectory(prefix="orrery-sweep-") as tmp:
            results = _orrery.sweep(plan, os.path.join(tmp, "results.json"), csv, html, jobs, resume, max_points, progress)
    else:
        results = _orrery.sweep(plan, out, csv, html, jobs, resume, max_points, progress)
    rows = results["rows"]
    if not frame:
        return rows
    import pandas
    return pandas.DataFrame(rows, columns=results["columns"])


def plan(plan, *, gpus=None, top=None, train_tokens="", cluster_sizes="", report=None, progress=None):
    """A plan search (`orrery plan`): the best parallel plans, confirmed with the emulator.
    `cluster_sizes` is a list of GPU counts (or "64,128")."""
    if not isinstance(cluster_sizes, str):
        cluster_sizes = ",".join(str(n) for n in cluster_sizes)
    return _orrery.plan(plan, gpus, top, train_tokens, cluster_sizes, report, progress)


def replay(graph, *, trace=None, report=None):
    """A task-graph JSON run on the engine (`orrery replay`): makespan and each stream's busy time."""
    return _orrery.replay(graph, trace, report)


def topology(spec="dgx-h100", *, save=None):
    """A fabric's summary (`orrery topology`), as printed; `save` writes it as JSON."""
    return _orrery.topology(str(spec), save)


def gpus(catalog=None):
    """The GPU catalog with its sources (`orrery gpus`), as printed; `catalog` adds a JSON file's GPUs."""
    return _orrery.gpus(catalog)


def cost(kernels, *, gpu="H100", calibration=None, catalog=None, report=None):
    """Kernels costed on a GPU (`orrery cost`): `kernels` are specs ("gemm:m=4096,n=4096,k=4096")."""
    if isinstance(kernels, str):
        kernels = [kernels]
    return _orrery.cost(gpu, list(kernels), calibration, catalog, report)


def calibrate_measure(out, *, quick=False, repetitions=7, seed=1, progress=None):
    """The CPU harness's profile (`orrery calibrate measure --device cpu`), written to `out`."""
    return _orrery.calibrate_measure(out, quick, repetitions, seed, progress)


def calibrate_fit(profile, *, out=None):
    """Cost curves fitted to a profile (`orrery calibrate fit`): the leave-one-out errors, as printed."""
    return _orrery.calibrate_fit(profile, out)


def doclens(action, *, out, source="", data_dir=None, model="lognormal_pareto", median=644, p99=71000, max=1048576, seed=1, tokens=0,
            batches=0):
    """A document-length trace (`orrery doclens convert|generate`) written to `out`."""
    return _orrery.doclens(action, source, data_dir, model, median, p99, max, seed, tokens, batches, out)


def validate(*, data_dir=None, out=None, only="", progress=None):
    """Predictions against the published measurements (`orrery validate`), as printed."""
    return _orrery.validate(data_dir, out, only, progress)


def policies():
    """Every policy family and its parameters (`orrery policies`)."""
    return _orrery.policies()
