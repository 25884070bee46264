#pragma once
// Per-thread buffers for per-row values a pass needs only while it works on a chunk (or a block),
// instead of a row-length vector of the batch's (docs/native.md, "Memory").

#include <cstddef>
#include <vector>

namespace rh::cpu {

// A buffer of the calling thread's, at least `size` entries. One buffer per Use, so that two
// uses within one chunk never share it.
template <class Use, class V>
V* thread_rows(std::size_t size) {
  thread_local std::vector<V> buffer;
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

// The uses.
struct LossTerms {};   // w rho(r) or its change, before the sum in row order
struct Scores {};      // w psi(r) of a chunk
struct InferenceTerms {};  // the inference sums' terms of a chunk's rows (three per row)
struct GramRows {};    // the incremental Gram's entering rows of a block
struct LeavingRows {};  // and its leaving rows
struct ScaledRows {};  // the incremental Gram's staged scaled rows (SYRK)
struct GramLeaving {};  // the incremental Gram's correction for a block's leaving rows (d x d)
struct OutsideRows {};  // a chunk's rows outside the bandwidth (steps by expansion)
struct NearFlags {};    // a chunk's rows near the bandwidth's edge (steps by expansion)
struct FlipFlags {};    // a block's rows whose curvature flipped (the incremental Gram)
struct NearDots {};     // the near rows' products with a vector
struct NearScores {};   // the near rows' w psi off the anchor's piece, and their curvature
struct NearTerms {};    // the near rows' terms of a sum (expansion.cpp)
struct RowSquares {};   // a chunk's rows' x . x (their norms' bounds are formed from them)
struct QrRows {};       // a block's weighted rows for tpqrt, column-major (square_root.cpp)
struct KeptRows {};     // a chunk's rows of non-zero curvature (square_root.cpp)
struct KeptScales {};   // their sqrt(w c)

}  // namespace rh::cpu
