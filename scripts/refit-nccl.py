#!/usr/bin/env python3
"""Rewrites the fitted values in models/network/nccl.cpp (CommParams::fitted()) from
`orrery validate --only nccl --print-fit`, so that a change to the model or the data is one
refit away:  build/bin/orrery validate --data ../shared/data --only nccl --print-fit | python3 scripts/refit-nccl.py
"""
import re
import sys
from pathlib import Path

fit = {}
for line in sys.stdin:
    m = re.match(r"fit (\S+) = (\S+)$", line.strip())
    if m:
        fit[m.group(1)] = m.group(2)
if not fit:
    sys.exit("refit-nccl.py: no 'fit name = value' lines on stdin (run orrery validate --only nccl --print-fit)")

source = Path(__file__).resolve().parent.parent / "models/network/nccl.cpp"
text = source.read_text()
begin = text.index("// BEGIN FITTED")
end = text.index("// END FITTED")
arrays = {"nvlink_share": ["volta", "ampere", "hopper", "blackwell"], "nvls_share": ["volta", "ampere", "hopper", "blackwell"],
          "net_share": ["ib", "roce", "efa", "tcpxo", "slingshot", "socket"], "net_latency_us": ["ib", "roce", "efa", "tcpxo", "slingshot", "socket"]}
defaults = {"nvlink_share.volta": "0.8", "nvls_share.volta": "0.0", "nvls_share.ampere": "0.0"}
lines = ["// BEGIN FITTED (scripts/refit-nccl.py writes this block)"]
for name, keys in arrays.items():
    values = []
    for k in keys:
        key = f"{name}.{k}"
        if key not in fit and key not in defaults:
            sys.exit(f"refit-nccl.py: no value for {key}")
        values.append(fit.get(key, defaults.get(key)))
    lines.append(f"  p.{name} = {{{', '.join(values)}}};")
for scalar in ("launch_us", "launch_per_gpu_us", "p2p_peer_us"):
    lines.append(f"  p.{scalar} = {fit[scalar]};")
lines.append("  ")
source.write_text(text[:begin] + "\n".join(lines) + text[end:])
print(f"refit-nccl.py: {len(fit)} parameters written to {source}")
