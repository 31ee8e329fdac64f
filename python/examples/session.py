"""A short session with the Python module (run from the repository root after `make demo`):
    PYTHONPATH=build/python python3 python/examples/session.py
"""
import orrery

# One training step: the report's figures, exact.
r = orrery.step("examples/scenarios/llama3-70b-h100-64.json")
print(f"Llama 3 70B on 64 H100: step {r['step_time_s']:.2f} s, MFU {100 * r['mfu']:.1f}%, "
      f"{r['tokens_per_s'] / 1e3:.1f}k tokens/s, peak {r['peak_memory_bytes'] / 2**30:.1f} GiB")

# A sweep into a DataFrame: the closed-form estimate over the plan's axes.
frame = orrery.sweep("examples/sweeps/llama3-8b-plans.json", frame=True)
ok = frame[frame.status == "ok"]
print(f"sweep: {len(frame)} points, {len(ok)} ok; best tokens/s:")
axes = [c for c in frame.columns if c not in ("point", "status", "reason")][:3]
print(ok.sort_values("tokens_per_s", ascending=False)[axes + ["tokens_per_s", "mfu"]].head(3).to_string(index=False))

# A policy comparison on a long-tail workload: the sequence policies side by side.
c = orrery.compare("examples/scenarios/qwen3-8b-256k-balance.json", policies="packing,wlb-llm,libra", steps=8)
policies = c["policies"]
for p in (policies.values() if isinstance(policies, dict) else policies):
    print(f"{p['name']:>8}: p50 step {p['step_time_p50_s']:.2f} s, {p['tokens_per_s'] / 1e3:.0f}k tokens/s")

# Bad input is one line naming the file and the place.
import json
scenario = json.load(open("examples/scenarios/llama3-70b-h100-64.json"))
scenario["plan"]["tp"] = 3
try:
    orrery.step(scenario)
except orrery.InputError as e:
    print("InputError:", e)
