#!/usr/bin/env python3
"""Writes examples/graphs/*.json. A developer tool: the build never runs it.

gpipe_4x4.json: one step of GPipe over p=4 stages and m=4 micro-batches with forward f=1 ms and
backward b=2 ms per stage, after a 0.5 ms data-loading delay; each stage then all-reduces its
gradients (1.5 ms, comm stream) and steps the optimizer (0.3 ms). By hand, the pipeline takes
(m+p-1)(f+b) = 21 ms, so the makespan is 0.5 + 21 + 1.5 + 0.3 = 23.3 ms.
"""
import json
import pathlib

P, M = 4, 4
nodes = [{"id": "load", "kind": "delay", "duration": "500 us"}]
for s in range(P):
    for i in range(M):
        deps = ["load"] if s == 0 else [f"f{i}s{s-1}"]
        nodes.append({"id": f"f{i}s{s}", "name": f"forward mb{i}", "device": f"gpu{s}",
                      "stream": "compute", "duration": "1 ms", "deps": deps})
for s in reversed(range(P)):
    for i in range(M):
        # GPipe flushes: the last stage starts backward only after its last forward.
        deps = [f"f{i}s{s}", f"f{M-1}s{s}"] if s == P - 1 else [f"b{i}s{s+1}", f"f{i}s{s}"]
        if s == P - 1 and i == M - 1:
            deps = [f"f{i}s{s}"]
        nodes.append({"id": f"b{i}s{s}", "name": f"backward mb{i}", "device": f"gpu{s}",
                      "stream": "compute", "duration": "2 ms", "deps": deps})
for s in range(P):
    nodes.append({"id": f"ar{s}", "name": "grad all-reduce", "device": f"gpu{s}", "stream": "comm",
                  "duration": "1.5 ms", "deps": [f"b{M-1}s{s}"]})
    nodes.append({"id": f"opt{s}", "name": "optimizer", "device": f"gpu{s}", "stream": "compute",
                  "duration": "300 us", "deps": [f"ar{s}"]})

graph = {"name": "GPipe, 4 stages x 4 micro-batches",
         "description": "Hand-checkable: makespan 0.5 + (4+4-1)*(1+2) + 1.5 + 0.3 = 23.3 ms",
         "nodes": nodes}
out = pathlib.Path(__file__).resolve().parent.parent / "examples" / "graphs" / "gpipe_4x4.json"
out.write_text(json.dumps(graph, indent=1) + "\n")
print(f"wrote {out} ({len(nodes)} nodes)")
