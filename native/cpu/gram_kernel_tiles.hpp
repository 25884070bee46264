#pragma once
// The thin-Gram kernel's body (gram_kernel.hpp), written once over a vector ISA's traits S and
// included by the translation unit of each ISA (gram_kernel_avx2.cpp, gram_kernel_avx512.cpp),
// which is compiled for that ISA and defines S:
//   Reg, Mask; lanes; max_rows_1 / max_rows_2 (the register tiles below);
//   load(p), load(p, mask) (masked-off lanes +0), store(p, v), broadcast(p), mul, sqrt, fma;
//   below(first, limit) (lanes i with first + i < limit); Unit, unit(lane) and
//   with_unit(v, unit, root): v with root in `lane` (none when lane < 0), exactly root * 1.0.
//
// Per L1-sized sub-chunk of the listed rows, the rows u = sqrt(w) x~ are staged (the intercept's
// entry sqrt(w), the row padded with zeros to whole vectors), rounded exactly as the library
// path's scaled rows; then the lower triangle, held for the call in a private square padded to
// whole vectors, is cut into column panels of 1 or 2 vectors and, within a panel, its rows a go
// through register tiles of accumulators: acc[a][b..] = fma(u[b..], broadcast u[a], acc). Each
// tile loads its accumulators, runs over the sub-chunk and stores them back, so each entry is one
// running sum over all rows in order, whatever the cut — and whatever the vector width: an entry
// is the same chain of fused multiply-adds in any lane of any tile, so the ISAs give the same bits
// (GramKernel.Avx512MatchesAvx2Bitwise). Why stage rather than weight one side in registers: the
// product must be symmetric, (sqrt(w) x_a)(sqrt(w) x_b), for exactly duplicated columns to give
// exactly duplicated Gram rows ((w x_b) x_a is not); scaling the broadcast side in registers too
// would add a multiply per broadcast (about 40 % more arithmetic at d = 17).
//
// What the speed rests on (experiments thin-gram-round-3-*, AMD EPYC Zen 3, GCC 12):
// - every tile loop is unrolled by pragma: without it GCC kept the 12 accumulators in an array
//   on the stack, a load + FMA + store per entry per row (1.4-1.7x of the whole kernel);
// - the private padded square: plain loads and stores of whole vectors (the entries above the
//   diagonal and in the padding are computed and thrown away), no masked load/store per tile;
// - rows of a panel split into tiles of even sizes (17 rows: 9 + 8, not 12 + 5), and no tile
//   of fewer than 8 accumulators but the triangle's corner (the FMA latency is 4 cycles, with
//   2 units: 8 independent accumulators needed);
// - with 8 lanes or more (AVX-512, float32 in AVX2), no work above the diagonal that a
//   one-vector tile can skip (panel(): at d = 33 in float64, 85 FMAs a staged row instead of
//   101; the kernel 0.82-0.92x in float32 and 0.95-0.98x in float64 on an AMD EPYC, Zen 5:
//   experiment thin-gram-diagonal-heads);
// - staging is about half of the time at d = 17: sqrt over whole vectors of weights, and the
//   next sub-chunk's rows of X prefetched (to L2) while this one is staged; scratch aligned to
//   cache lines.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rh::cpu::gram::detail::tiles {

// A sub-chunk of staged rows u_k = sqrt(w) x~ and the padded accumulator square they are added
// to (both `stride` elements a row, a multiple of the lanes).
template <class T>
struct Staged {
  const T* u;
  std::size_t count;
  T* acc;
  std::size_t stride;
};

// Rows a0 .. a0 + R - 1 of the square, columns b0 .. b0 + NV * lanes - 1; with Corner, also the
// last row's next vector of columns (the triangle's corner when it is one row: its chain in a
// tile with other accumulators instead of a tile of its own that waits on the FMA latency).
template <class S, class T, std::size_t R, std::size_t NV, bool Corner>
void tile(const Staged<T>& s, std::size_t a0, std::size_t b0) {
  typename S::Reg acc[R][NV];
  typename S::Reg corner{};
  T* const out = s.acc + a0 * s.stride + b0;
#pragma GCC unroll 32
  for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::load(out + r * s.stride + v * S::lanes);
  }
  if constexpr (Corner) corner = S::load(out + (R - 1) * s.stride + NV * S::lanes);
  // Two pointers that step a row at a time, so that every load below is at a constant offset
  // from one of them (indices a0 + r kept in registers ran out of them and spilled).
  const T* col = s.u + b0;
  const T* row = s.u + a0;
  const std::size_t stride = s.stride;
  for (std::size_t k = s.count; k > 0; --k, col += stride, row += stride) {
    typename S::Reg cols[NV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) cols[v] = S::load(col + v * S::lanes);
#pragma GCC unroll 32
    for (std::size_t r = 0; r < R; ++r) {
      const typename S::Reg ua = S::broadcast(row + r);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fma(cols[v], ua, acc[r][v]);
      if constexpr (Corner) {
        if (r + 1 == R) corner = S::fma(S::load(col + NV * S::lanes), ua, corner);
      }
    }
  }
#pragma GCC unroll 32
  for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) S::store(out + r * s.stride + v * S::lanes, acc[r][v]);
  }
  if constexpr (Corner) S::store(out + (R - 1) * s.stride + NV * S::lanes, corner);
}

template <class S, class T, std::size_t NV, bool Corner, std::size_t... R>
void tile_of(const Staged<T>& s, std::size_t rows, std::size_t a0, std::size_t b0,
             std::index_sequence<R...>) {
  ((rows == R + 1 ? tile<S, T, R + 1, NV, Corner>(s, a0, b0) : void()), ...);
}

// Rows first .. end - 1 of the panel at column b0, in as few NV-vector tiles as the registers
// allow, of even sizes; with corner, the last tile takes the one-row corner (tile()).
template <class S, class T, std::size_t NV>
void panel_rows(const Staged<T>& s, std::size_t first, std::size_t end, std::size_t b0,
                bool corner = false) {
  constexpr std::size_t max_rows = NV == 1 ? S::max_rows_1 : S::max_rows_2;
  const std::size_t n = end - first;
  const std::size_t tiles = (n + max_rows - 1) / max_rows;
  std::size_t a = first;
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::size_t rows = n / tiles + (t < n % tiles ? 1 : 0);
    if (corner && t + 1 == tiles) {
      tile_of<S, T, NV, true>(s, rows, a, b0, std::make_index_sequence<max_rows>{});
    } else {
      tile_of<S, T, NV, false>(s, rows, a, b0, std::make_index_sequence<max_rows>{});
    }
    a += rows;
  }
}

// The panel's rows, from its first column to dim - 1. A two-vector panel's first `lanes` rows
// reach only its first vector's columns (the second's are above the diagonal): where a vector
// has 8 lanes or more they take a one-vector tile, which still has the 8 independent
// accumulators the two FMA units need to hide their latency (with 4 lanes it would wait on it).
template <class S, class T, std::size_t NV>
void panel(const Staged<T>& s, std::size_t dim, std::size_t b0, bool corner = false) {
  std::size_t a = b0;
  if constexpr (NV == 2 && S::lanes >= 8) {
    const std::size_t head = std::min(dim - b0, S::lanes);
    tile_of<S, T, 1, false>(s, head, b0, b0, std::make_index_sequence<S::max_rows_1>{});
    a += head;
  }
  if (a < dim) panel_rows<S, T, NV>(s, a, dim, b0, corner);
}

template <class S, class T>
void accumulate(const T* X, std::size_t features, bool intercept, const T* weights,
                const std::size_t* rows, std::size_t count, T* gram) {
  constexpr std::size_t L = S::lanes;
  const std::size_t dim = features + (intercept ? 1 : 0);
  const std::size_t stride = (dim + L - 1) / L * L;
  const std::size_t vectors = stride / L;
  // Sub-chunks of about 24 KiB of staged rows: they stay in L1 while every tile runs over them.
  const std::size_t sub = std::max<std::size_t>(16, (24u << 10) / (stride * sizeof(T)));
  // One thread-local scratch area aligned to cache lines (no vector access to it crosses a
  // line): the staged rows, their roots, the accumulator square.
  constexpr std::size_t line = 64 / sizeof(T);
  const std::size_t roots_size = (sub + line - 1) / line * line;
  thread_local std::vector<T> scratch;
  const std::size_t need = sub * stride + roots_size + stride * stride + line;
  if (scratch.size() < need) scratch.resize(need);
  T* const staged = scratch.data() + (line - reinterpret_cast<std::uintptr_t>(scratch.data()) /
                                                 sizeof(T) % line) % line;
  T* const roots = staged + sub * stride;
  T* const acc = roots + roots_size;
  std::fill_n(acc, stride * stride, T{0});
  for (std::size_t a = 0; a < dim; ++a) std::copy_n(gram + a * dim, a + 1, acc + a * stride);

  const std::size_t full = features / L * L;  // features in whole vectors
  const typename S::Mask tail = S::below(std::ptrdiff_t(full), std::ptrdiff_t(features));
  const typename S::Unit one = S::unit(intercept ? std::ptrdiff_t(features - full) : -1);
  const std::size_t row_bytes = features * sizeof(T);
  // The panels, the same for every sub-chunk. An odd vector count's one-vector panel: last where
  // vectors have 8 lanes or more (then it is the triangle's corner, at most L rows, and the
  // two-vector panels before it broadcast each staged entry once for two vectors), first with
  // narrower ones (a corner of fewer than 8 rows would wait on the FMA latency). At d = 2L + 1
  // (float64 d = 17, float32 d = 33 with AVX-512: the intercept's row alone in the third vector)
  // that corner is one row and rides in the one two-vector panel's last tile: 0.90x and 0.93x
  // the kernel's time there. With more vectors the corner weighs little and the larger tile it
  // joins ran 1.02-1.05x slower (experiment thin-gram-corner-in-tile).
  const bool odd_panel_first = L < 8 && vectors % 2 == 1;
  const bool fold_corner = L >= 8 && vectors == 3 && dim % L == 1;
  for (std::size_t k0 = 0; k0 < count; k0 += sub) {
    const std::size_t n = std::min(count, k0 + sub) - k0;
    std::size_t k = 0;
    for (; k + L <= n; k += L) {
      alignas(64) T w[L];
      for (std::size_t i = 0; i < L; ++i) w[i] = weights[rows[k0 + k + i]];
      S::store(roots + k, S::sqrt(S::load(w)));
    }
    for (; k < n; ++k) roots[k] = std::sqrt(weights[rows[k0 + k]]);
    const std::size_t next = std::min(count, k0 + 2 * sub) - std::min(count, k0 + sub);
    T* u = staged;
    for (k = 0; k < n; ++k, u += stride) {
      if (k < next) {
        const char* x = reinterpret_cast<const char*>(X + rows[k0 + sub + k] * features);
        for (std::size_t b = 0; b < row_bytes; b += 64) _mm_prefetch(x + b, _MM_HINT_T1);
      }
      const T* x = X + rows[k0 + k] * features;
      const typename S::Reg root = S::broadcast(roots + k);
      std::size_t j = 0;
      for (; j < full; j += L) S::store(u + j, S::mul(S::load(x + j), root));
      // The last vector: the remaining features, the intercept's root, zeros (root * +0 = +0
      // exactly, and the intercept's entry is root, i.e. root * 1.0: the bits of the scalar
      // staging).
      if (j < stride) {
        S::store(u + j, S::with_unit(S::mul(S::load(x + j, tail), root), one, root));
      }
    }
    const Staged<T> s{staged, n, acc, stride};
    std::size_t v = 0;
    if (odd_panel_first) panel<S, T, 1>(s, dim, 0), v = 1;
    for (; v + 2 <= vectors; v += 2) panel<S, T, 2>(s, dim, v * L, fold_corner);
    if (v < vectors && !fold_corner) panel<S, T, 1>(s, dim, v * L);
  }
  for (std::size_t a = 0; a < dim; ++a) std::copy_n(acc + a * stride, a + 1, gram + a * dim);
}

}  // namespace rh::cpu::gram::detail::tiles
