"""Shape-sweep benchmark of the renewable Huber engines (RFC 0001, "Benchmark protocol").

The command line is ``scripts/benchmarks/benchmark_shape_sweep.py``; this package holds its
parts: the profiles and the sweep (:mod:`.sweep`), the timing contracts (:mod:`.contracts`),
the machine's limits (:mod:`.limits`), the run metadata (:mod:`.environment`), the schema v2
validation (:mod:`.schema`) and the comparison, gate, tables and plots (:mod:`.report`).
"""

SCHEMA_NAME = "rhuber/benchmark-shape-sweep"
SCHEMA_VERSION = 2
#: Compatible revisions of schema v2 (absent in a document: 0). Revision 1 adds the records'
#: ``path`` ("engine": ``engine.update``; "estimator": a public estimator's ``partial_fit`` or
#: ``fit``) and ``timed_call``, and requires ``solver_iterations.rcond_per_batch`` (which the
#: 2026-11-29 runs lack); documents of revision 0 read as engine path for the engines and
#: estimator path for the peers, which is what they timed.
SCHEMA_MINOR = 1
