#!/usr/bin/env python3
"""Write OUT.json (argument): a synthetic parameter space in the recorded tables' format.

The bundled C templates declare 3 to 9 points, too few to tell search strategies apart;
this space has 6 x 6 x 5 x 4 x 5 = 3600 declared points (bench/data/synth_param.c), of which
kforge:require TILE_M * TILE_N <= 8192 leaves 3000, and BLOCK = 512 always crashes (a
constraint to learn; 600 points), so 2400 points have times. Two visible shapes with different optima (the tile shape that suits
each differs). The time is a smooth bowl in log2 of each parameter, an UNROLL x VEC
interaction, and 2 percent multiplicative log-normal noise drawn once per point (seed 1):
a stand-in for a real surface, said so wherever its figures are quoted. The template's
defaults (the first values: TILE_M=256 TILE_N=8 UNROLL=16 VEC=1 BLOCK=32) lie far from the
optimum. With --rugged, a second basin about 10 percent worse than the best compromise (around TILE_M=128
TILE_N=8 UNROLL=16 VEC=1) holds the defaults: a walk from them must leave a local optimum.

Usage: bench/synth_space.py OUT.json [--rugged]
"""
import itertools, json, math, os, random, sys

here = os.path.dirname(os.path.abspath(__file__))
params = [("TILE_M", [256, 8, 16, 32, 64, 128]), ("TILE_N", [8, 16, 32, 64, 128, 256]),
          ("UNROLL", [16, 1, 2, 4, 8]), ("VEC", [1, 2, 4, 8]), ("BLOCK", [32, 64, 128, 256, 512])]
rugged = "--rugged" in sys.argv
# per shape: optimum of log2 TILE_M, log2 TILE_N
optima = [(6, 5), (4, 7)]
rng = random.Random(1)
rows = []
for vals in itertools.product(*[v for _, v in params]):
    p = dict(zip([n for n, _ in params], vals))
    lm, ln, lu, lv, lb = (math.log2(p[k]) for k in ("TILE_M", "TILE_N", "UNROLL", "VEC", "BLOCK"))
    noise = [math.exp(rng.gauss(0, 0.02)) for _ in optima]
    row = {"point": {k: str(v) for k, v in p.items()}}
    if p["TILE_M"] * p["TILE_N"] > 8192:
        row["failure"] = "require"
    elif p["BLOCK"] == 512:
        row["failure"] = "crashed"
    else:
        row["shapes"] = []
        for s, (om, on) in enumerate(optima):
            cost = (1 + 0.08 * (lm - om) ** 2 + 0.08 * (ln - on) ** 2 + 0.05 * (lu - 3) ** 2
                    + 0.1 * (lv - 2) ** 2 + 0.03 * (lb - 7) ** 2 + 0.04 * (lu + lv - 5) ** 2)
            if rugged:
                alt = (1.28 + 0.08 * (lm - 7) ** 2 + 0.08 * (ln - 3) ** 2 + 0.05 * (lu - 4) ** 2
                       + 0.1 * (lv - 0) ** 2 + 0.03 * (lb - 7) ** 2)
                cost = min(cost, alt)
            row["shapes"].append({"sizes": {"shape": s}, "ns": round(1e5 * (1 + s) * cost * noise[s], 1),
                                  "rel_noise": 0.02})
    rows.append(row)
meta = {"task": "tasks/c/sgemm", "template": "bench/data/synth_param.c",
        "command": "python3 bench/synth_space.py OUT%s (synthetic, no measurement)" % (" --rugged" if rugged else ""),
        "machine": "none (synthetic)", "date": "synthetic",
        "params": [{"name": n, "values": [str(v) for v in vals]} for n, vals in params]}
json.dump({"meta": meta, "points": rows}, open(sys.argv[1], "w"), separators=(",", ":"))
