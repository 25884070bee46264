"""Shape-sweep benchmark of the renewable Huber engines (RFC 0001, "Benchmark protocol").

The command line is ``scripts/benchmarks/benchmark_shape_sweep.py``; this package holds its
parts: the profiles and the sweep (:mod:`.sweep`), the timing contracts (:mod:`.contracts`),
the machine's limits (:mod:`.limits`), the run metadata (:mod:`.environment`), the schema v2
validation (:mod:`.schema`) and the comparison, gate, tables and plots (:mod:`.report`).
"""

SCHEMA_NAME = "renewable-huber/benchmark-shape-sweep"
SCHEMA_VERSION = 2
