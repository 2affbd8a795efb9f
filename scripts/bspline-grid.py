#!/usr/bin/env python3
"""A wavy bicubic B-spline surface with n x n knot spans (n^2 Bezier patches once converted), as parasurf's
B-spline JSON: a large patch model for tessellation benchmarks.   usage: bspline-grid.py <n> <out.json>"""
import json
import math
import sys

n = int(sys.argv[1])
count = n + 3
knots = [0.0] * 4 + [k / n for k in range(1, n)] + [1.0] * 4
points = [[[i / (count - 1), j / (count - 1), 0.05 * math.sin(0.37 * i) * math.cos(0.29 * j)] for j in range(count)]
          for i in range(count)]
with open(sys.argv[2], "w") as f:
    json.dump({"degree": [3, 3], "knots": [knots, knots], "points": points}, f)
