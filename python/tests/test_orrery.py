"""The Python module against the command line: the same library entries, the same reports."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import orrery

SOURCE = Path(os.environ.get("ORRERY_SOURCE_DIR", Path(__file__).resolve().parents[2]))
EXAMPLES = SOURCE / "examples"
LLAMA = EXAMPLES / "scenarios" / "llama3-70b-h100-64.json"


def test_step_from_a_path_is_the_report_the_command_line_writes(tmp_path):
    r = orrery.step(str(LLAMA), report=tmp_path / "r.json")
    # The dict is the --report file, key for key and value for value.
    assert r == json.loads((tmp_path / "r.json").read_text())
    assert 0.2 < r["mfu"] < 0.7
    assert r["gpus"] == 64 and r["step_time_s"] > 0


def test_step_from_a_dict_equals_the_file():
    scenario = json.loads(LLAMA.read_text())
    assert orrery.step(scenario) == orrery.step(LLAMA)


def test_the_default_scenario_and_the_estimate():
    emulated = orrery.step()
    estimated = orrery.estimate()
    assert estimated["estimate"] is True
    # The closed form stays close to the emulator on the default scenario (estimate_test.cpp
    # holds it within 10% across its cases).
    assert abs(estimated["step_time_s"] / emulated["step_time_s"] - 1) < 0.15


def test_a_malformed_scenario_raises_input_error_with_file_and_pointer(tmp_path):
    scenario = json.loads(LLAMA.read_text())
    scenario["plan"]["tp"] = "eight"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(scenario))
    with pytest.raises(orrery.InputError) as e:
        orrery.step(path)
    assert str(e.value).startswith(f"{path}:/plan/tp: ")
    with pytest.raises(orrery.InputError) as e:
        orrery.step(scenario)
    assert str(e.value).startswith("<scenario dict>:/plan/tp: ")
    with pytest.raises(orrery.InputError, match="cannot open file"):
        orrery.step(tmp_path / "missing.json")
    with pytest.raises(TypeError):
        orrery.step(42)


def test_outputs_are_written_where_asked(tmp_path):
    orrery.step(LLAMA, trace=tmp_path / "t.json", html=tmp_path / "s.html")
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert (tmp_path / "s.html").read_text().startswith("<!DOCTYPE html>")


def policies_of(report):
    p = report["policies"]
    return [p[k] for k in sorted(p, key=int)] if isinstance(p, dict) else p


def test_compare_runs_each_sequence_policy():
    r = orrery.compare(EXAMPLES / "scenarios" / "qwen3-8b-256k-balance.json", policies="packing,libra", steps=2)
    assert [p["name"] for p in policies_of(r)] == ["packing", "libra"]


CLUSTER = {
    "cluster": {"pools": [{"gpu": "a100", "nodes": 1, "gpus_per_node": 8}]},
    "jobs": {"format": "csv", "path": "jobs.csv", "columns": {"arrival": "submit", "gpus": "n", "duration": "secs", "id": "name"}},
    "restart_overhead_s": 10,
}


def test_cluster_from_a_dict_resolves_its_trace_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs.csv").write_text("name,submit,n,secs\na,0,4,100\nb,10,4,50\nc,20,8,30\n")
    fifo = orrery.cluster(CLUSTER, policy="fifo", csv="jobs-out.csv")
    assert fifo["jobs_completed"] == 3 and fifo["policy"] == "fifo"
    assert (tmp_path / "jobs-out.csv").read_text().count("\n") == 4
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    assert orrery.cluster("cluster.json", policy="fifo") == fifo
    schedulers = orrery.compare(CLUSTER, policies="fifo,sjf")
    assert [p["name"] for p in policies_of(schedulers)] == ["fifo", "sjf"]


def test_collective():
    c = orrery.collective(topology="dgx-h100:nodes=2", op="all-reduce", size="1 GiB")
    assert c["busbw_GBps"] > 0
    assert c["nccl"]["algo"] == "nvls-tree"  # NCCL's choice across two H100 servers
    ring = orrery.collective(topology="dgx-h100:nodes=2", algo="ring", proto="simple", size="1 GiB")
    assert ring["nccl"]["algo"] == "ring" and ring["algo"] == "ring"
    with pytest.raises(orrery.InputError, match="did you mean"):
        orrery.collective(op="all-reduc")


def test_sweep_rows_and_dataframe(tmp_path):
    plans = sorted((EXAMPLES / "sweeps").glob("*.json"))
    plan = next(p for p in plans if json.loads(p.read_text()).get("command") in ("estimate", "collective"))
    rows = orrery.sweep(plan, out=tmp_path / "results.json", jobs=1)
    assert rows and all("status" in r for r in rows)
    assert rows == json.loads((tmp_path / "results.json").read_text())["rows"]
    pandas = pytest.importorskip("pandas")
    frame = orrery.sweep(plan, jobs=1, frame=True)
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(rows)


def test_progress_callback_sees_a_sweep():
    plans = sorted((EXAMPLES / "sweeps").glob("*.json"))
    plan = next(p for p in plans if json.loads(p.read_text()).get("command") in ("estimate", "collective"))
    updates = []
    orrery.sweep(plan, jobs=1, progress=updates.append)
    assert updates and updates[-1]["last"]
    assert updates[-1]["done"] == updates[-1]["total"] > 0
    assert all(u["label"].startswith("sweep ") and u["unit"] == "points" for u in updates)


def test_plan_search():
    spec = next(iter(sorted((EXAMPLES / "plans").glob("*.json"))))
    r = orrery.plan(spec, top=2)
    assert 1 <= len(r["plans"]) <= 2
    sizes = orrery.plan(spec, top=2, cluster_sizes=[64, 128])["sizes"]
    assert len(sizes) == 2


def test_the_command_line_and_the_module_agree(tmp_path):
    orrery_bin = os.environ.get("ORRERY_BINARY")
    if not orrery_bin:
        pytest.skip("ORRERY_BINARY not set")
    out = tmp_path / "cli.json"
    subprocess.run([orrery_bin, "step", str(LLAMA), "--report", str(out)], check=True, capture_output=True)
    assert orrery.step(LLAMA) == json.loads(out.read_text())


def test_every_other_command(tmp_path):
    r = orrery.replay(EXAMPLES / "graphs" / "gpipe_4x4.json", trace=tmp_path / "t.json")
    assert r["makespan_ns"] > 0 and (tmp_path / "t.json").exists()
    assert "GPUs" in orrery.topology("dgx-h100:nodes=2", save=tmp_path / "fabric.json")
    assert orrery.topology(tmp_path / "fabric.json") == orrery.topology("dgx-h100:nodes=2").replace("dgx-h100:nodes=2", str(tmp_path / "fabric.json"))
    assert "H100" in orrery.gpus()
    c = orrery.cost("gemm:m=4096,n=4096,k=4096", gpu="H100")
    assert c["kernels"]
    with pytest.raises(orrery.InputError, match="gpu"):
        orrery.cost("gemm:m=1,n=1,k=1", gpu="Z100")
    assert "libra" in orrery.policies() and "tiresias" in orrery.policies()
    orrery.doclens("generate", out=tmp_path / "lens.jsonl", tokens=65536, batches=2)
    assert len((tmp_path / "lens.jsonl").read_text().splitlines()) >= 2
    with pytest.raises(orrery.InputError, match="--out|-o"):
        orrery.calibrate_measure("")
    with pytest.raises(orrery.InputError):
        orrery.validate(data_dir=tmp_path / "no-data", only="network")
