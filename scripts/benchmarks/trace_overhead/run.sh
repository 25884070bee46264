#!/usr/bin/env bash
# Tracing's cost on the native CPU engine (docs/tracing.md, "Cost"), by alternating processes:
#   A: BASE, a native tree without tracing; B: AFTER, the tree with it, tracing off (null sink);
#   B': AFTER again (the A/A control: what alternation alone shows); ON: AFTER with tracing on.
# Usage: run.sh BASE_NATIVE_DIR AFTER_NATIVE_DIR [REPEATS]. Prints medians and ratios.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
base="$1"; after="$2"; repeats="${3:-9}"
work="${TMPDIR:-/tmp}/rh-trace-overhead"
mkdir -p "$work"
build() {  # tree dir, build dir, extra flags
  cmake -S "$here" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRH_TREE="$1" "${@:3}" >/dev/null
  cmake --build "$2" --parallel "${RH_JOBS:-2}" --target trace_overhead_driver >/dev/null
}
build "$base" "$work/base"
build "$after" "$work/after" -DRH_TRACE_DRIVER_ON=ON
for shape in "4096 16 20 5" "65536 32 4 3"; do
  a=(); b=(); c=(); on=()
  time_of() { "$work/$1/trace_overhead_driver" $shape "$2" | sed 's/.*: \(.*\)}/\1/'; }
  for ((k = 0; k < repeats; ++k)); do
    # The four variants in a rotating order, so that no variant always runs first or last.
    for ((i = 0; i < 4; ++i)); do
      case $(((i + k) % 4)) in
        0) a+=("$(time_of base off)") ;;
        1) b+=("$(time_of after off)") ;;
        2) c+=("$(time_of after off)") ;;
        3) on+=("$(time_of after on)") ;;
      esac
    done
  done
  python3 - "$shape" "${a[*]}" "${b[*]}" "${c[*]}" "${on[*]}" <<'PY'
import statistics, sys
shape = sys.argv[1].split()
a, b, c, on = ([float(v) for v in s.split()] for s in sys.argv[2:6])
m = statistics.median
print(f"{shape[0]} x {shape[1]}, {shape[2]} batches: base {m(a)*1e3:.2f} ms, off {m(b)*1e3:.2f} ms,"
      f" off again {m(c)*1e3:.2f} ms, on {m(on)*1e3:.2f} ms | off/base {m(b)/m(a):.3f}"
      f" (pairs {min(x/y for x, y in zip(b, a)):.3f}..{max(x/y for x, y in zip(b, a)):.3f}),"
      f" A/A off'/off {m(c)/m(b):.3f}, on/off {m(on)/m(b):.3f}")
PY
done
