// The thin-Gram kernel (native/cpu/gram_kernel.hpp): both variants against the library's SYRK on
// sqrt(w)-scaled rows within rounding, its invariances (row cuts, duplicated columns, the upper
// triangle untouched), and the engine with the kernel: bitwise the same on 1, 2 and 3 threads,
// and within rounding of the library path.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <rh/cpu/engine.hpp>
#include <vector>

#include "blas.hpp"
#include "gram_kernel.hpp"
#include "problems.hpp"

namespace {

namespace gram = rh::cpu::gram;

// Restores the mode the process started with (RH_GRAM_KERNEL) when a test ends.
struct ModeGuard {
  gram::Mode saved = gram::mode();
  explicit ModeGuard(gram::Mode m) { gram::set_mode(m); }
  ~ModeGuard() { gram::set_mode(saved); }
};

std::vector<gram::Isa> isas() {
  std::vector<gram::Isa> out{gram::Isa::scalar};
  if (gram::cpu_has_avx2_fma()) out.push_back(gram::Isa::avx2);
  if (gram::cpu_has_avx512()) out.push_back(gram::Isa::avx512);
  return out;
}

template <class T>
struct Case {
  std::size_t rows, features, dim;
  bool intercept;
  std::vector<T> X, w;
  std::vector<std::size_t> listed;  // rows with w != 0, in order
};

// Gaussian X; weights uniform in [0.5, 2], a tenth of them zero and a few huge.
template <class T>
Case<T> make_case(std::uint64_t seed, std::size_t rows, std::size_t features, bool intercept) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  Case<T> c{rows, features, features + (intercept ? 1 : 0), intercept, {}, {}, {}};
  c.X.resize(std::max<std::size_t>(rows * features, 1));
  for (T& x : c.X) x = static_cast<T>(normal(rng));
  c.w.resize(rows);
  const T huge = std::same_as<T, double> ? T(1e100) : T(1e15);
  for (std::size_t i = 0; i < rows; ++i) {
    c.w[i] = static_cast<T>(uniform(rng));
    if (i % 10 == 3) c.w[i] = T{0};
    if (i % 17 == 5) c.w[i] = huge;
    if (c.w[i] != T{0}) c.listed.push_back(i);
  }
  return c;
}

// The library's lower triangle: SYRK on sqrt(w) x~ (as the engine's staged path).
template <class T>
std::vector<T> library_gram(const Case<T>& c) {
  std::vector<T> scaled(std::max<std::size_t>(c.listed.size(), 1) * c.dim, T{0});
  for (std::size_t k = 0; k < c.listed.size(); ++k) {
    const std::size_t i = c.listed[k];
    const T root = std::sqrt(c.w[i]);
    for (std::size_t j = 0; j < c.features; ++j) scaled[k * c.dim + j] = root * c.X[i * c.features + j];
    if (c.intercept) scaled[k * c.dim + c.features] = root;
  }
  std::vector<T> g(c.dim * c.dim, T{0});
  if (!c.listed.empty()) rh::cpu::blas::syrk_lower(c.listed.size(), c.dim, scaled.data(), T{0}, g.data(), c.dim);
  return g;
}

// sum_i w_i |x~_ia| |x~_ib| in long double: the scale of each entry's rounding error.
template <class T>
std::vector<long double> magnitude(const Case<T>& c) {
  std::vector<long double> m(c.dim * c.dim, 0.0L);
  auto x = [&](std::size_t i, std::size_t j) -> long double {
    return j < c.features ? std::fabs(static_cast<long double>(c.X[i * c.features + j])) : 1.0L;
  };
  for (std::size_t i : c.listed) {
    for (std::size_t a = 0; a < c.dim; ++a) {
      for (std::size_t b = 0; b <= a; ++b) m[a * c.dim + b] += c.w[i] * x(i, a) * x(i, b);
    }
  }
  return m;
}

constexpr double sentinel = 12345.0;

template <class T>
std::vector<T> kernel_gram(gram::Isa isa, const Case<T>& c, std::size_t pieces = 1) {
  std::vector<T> g(c.dim * c.dim, T{0});
  for (std::size_t a = 0; a < c.dim; ++a) {
    for (std::size_t b = a + 1; b < c.dim; ++b) g[a * c.dim + b] = T(sentinel);
  }
  // The list cut into `pieces` calls of uneven sizes.
  std::size_t done = 0;
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    const std::size_t end = piece + 1 == pieces ? c.listed.size()
                                                : std::min(c.listed.size(), done + (piece * 7 + 3) % 29 + 1);
    gram::accumulate_lower(isa, c.X.data(), c.features, c.intercept, c.w.data(),
                           c.listed.data() + done, end - done, g.data());
    done = end;
  }
  return g;
}

template <class T>
void expect_matches_library(const Case<T>& c) {
  const std::vector<T> reference = library_gram(c);
  const std::vector<long double> scale = magnitude(c);
  // Both are sums of n = rows terms, each with at most 3 roundings: |difference| <=
  // 2 gamma_{n+3} sum |terms| ~ (n + 3) eps sum |terms| (Higham §3.1), with slack 2.
  const double eps = std::numeric_limits<T>::epsilon();
  const long double tolerance = 2.0L * static_cast<long double>((c.rows + 3) * eps);
  for (gram::Isa isa : isas()) {
    const std::vector<T> g = kernel_gram(isa, c);
    for (std::size_t a = 0; a < c.dim; ++a) {
      for (std::size_t b = 0; b < c.dim; ++b) {
        const std::size_t k = a * c.dim + b;
        if (b > a) {
          ASSERT_EQ(g[k], T(sentinel)) << "upper triangle written at " << a << "," << b;
          continue;
        }
        const long double error = std::fabs(static_cast<long double>(g[k]) - reference[k]);
        ASSERT_LE(error, tolerance * scale[k] + std::numeric_limits<T>::min())
            << "isa " << int(isa) << " d " << c.dim << " rows " << c.rows << " entry " << a << ","
            << b << ": " << g[k] << " vs " << reference[k];
      }
    }
  }
}

template <class T>
void differential_sweep() {
  std::uint64_t seed = 1;
  for (std::size_t features : {0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 15, 16, 17, 23, 31, 32, 33, 47, 64, 65,
                               90, 91, 128, 129, 200, 256, 299}) {
    for (bool intercept : {true, false}) {
      if (features == 0 && !intercept) continue;
      for (std::size_t rows : {1, 3, 37, 301}) {
        if (features > 100 && rows == 301) rows = 131;  // keeps the reference's cost down
        expect_matches_library(make_case<T>(seed++, rows, features, intercept));
      }
    }
  }
}

TEST(GramKernel, Float64MatchesTheLibraryWithinRounding) { differential_sweep<double>(); }
TEST(GramKernel, Float32MatchesTheLibraryWithinRounding) { differential_sweep<float>(); }

template <class T>
void expect_cut_invariant() {
  for (std::size_t features : {3, 8, 16, 33, 91}) {
    const auto c = make_case<T>(features, 517, features, true);
    for (gram::Isa isa : isas()) {
      const std::vector<T> whole = kernel_gram(isa, c, 1);
      EXPECT_EQ(whole, kernel_gram(isa, c, 9)) << "d " << c.dim;  // bitwise
      EXPECT_EQ(whole, kernel_gram(isa, c, 40)) << "d " << c.dim;
    }
  }
}

TEST(GramKernel, ResultDoesNotDependOnHowRowsAreCut) {
  expect_cut_invariant<double>();
  expect_cut_invariant<float>();
}

// The AVX2 and AVX-512 variants' exact order: every entry is acc = fma(u_b, u_a, acc) over the listed rows in
// order, from the Gram's value, u = sqrt(w) x~ rounded as the library path's scaled rows; so its
// bits are those of this scalar loop, whatever its tiles, padding and sub-chunks.
template <class T>
void expect_fma_chain_bits(gram::Isa isa) {
  for (std::size_t features : {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 95}) {
    for (bool intercept : {true, false}) {
      if (features == 0 && !intercept) continue;
      const auto c = make_case<T>(100 + features, 700, features, intercept);
      std::vector<T> reference(c.dim * c.dim, T{0}), u(c.dim);
      for (std::size_t a = 0; a < c.dim; ++a) {
        for (std::size_t b = a + 1; b < c.dim; ++b) reference[a * c.dim + b] = T(sentinel);
      }
      for (std::size_t i : c.listed) {
        const T root = std::sqrt(c.w[i]);
        for (std::size_t j = 0; j < c.features; ++j) u[j] = root * c.X[i * c.features + j];
        if (c.intercept) u[c.features] = root;
        for (std::size_t a = 0; a < c.dim; ++a) {
          for (std::size_t b = 0; b <= a; ++b) {
            reference[a * c.dim + b] = std::fma(u[b], u[a], reference[a * c.dim + b]);
          }
        }
      }
      EXPECT_EQ(kernel_gram(isa, c, 3), reference) << "isa " << int(isa) << " d " << c.dim;  // bitwise
    }
  }
}

TEST(GramKernel, Avx2IsTheFmaChainInRowOrder) {
  if (!gram::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA";
  expect_fma_chain_bits<double>(gram::Isa::avx2);
  expect_fma_chain_bits<float>(gram::Isa::avx2);
}

// Same chain, twice the lanes and registers: the same bits as the AVX2 variant, so which of the
// two a CPU runs never changes a result.
TEST(GramKernel, Avx512IsTheSameFmaChainAsAvx2) {
  if (!gram::cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_fma_chain_bits<double>(gram::Isa::avx512);
  expect_fma_chain_bits<float>(gram::Isa::avx512);
  for (std::size_t features : {1, 7, 16, 31, 64, 90, 95, 130}) {
    const auto c = make_case<double>(300 + features, 1000, features, true);
    EXPECT_EQ(kernel_gram(gram::Isa::avx512, c, 5), kernel_gram(gram::Isa::avx2, c, 2)) << features;
    const auto f = make_case<float>(400 + features, 1000, features, features % 2 == 0);
    EXPECT_EQ(kernel_gram(gram::Isa::avx512, f, 5), kernel_gram(gram::Isa::avx2, f, 2)) << features;
  }
}

TEST(GramKernel, AutomaticModeRunsTheWidestIsaAndAForcedOneFallsBack) {
  ModeGuard guard(gram::Mode::automatic);
  const gram::Isa best = gram::cpu_has_avx512()     ? gram::Isa::avx512
                         : gram::cpu_has_avx2_fma() ? gram::Isa::avx2
                                                    : gram::Isa::scalar;
  EXPECT_EQ(gram::kernel_isa(), best);
  gram::set_mode(gram::Mode::avx2);
  EXPECT_EQ(gram::kernel_isa(), gram::cpu_has_avx2_fma() ? gram::Isa::avx2 : gram::Isa::scalar);
  gram::set_mode(gram::Mode::avx512);
  EXPECT_EQ(gram::kernel_isa(), best);
}

TEST(GramKernel, DuplicatedColumnsGiveExactlyDuplicatedEntries) {
  // Column 5 is column 2, column 9 is all ones like the intercept.
  for (gram::Isa isa : isas()) {
    auto c = make_case<double>(7, 203, 12, true);
    for (std::size_t i = 0; i < c.rows; ++i) {
      c.X[i * 12 + 5] = c.X[i * 12 + 2];
      c.X[i * 12 + 9] = 1.0;
    }
    const std::vector<double> g = kernel_gram(isa, c);
    auto at = [&](std::size_t a, std::size_t b) { return a >= b ? g[a * c.dim + b] : g[b * c.dim + a]; };
    for (std::size_t j = 0; j < c.dim; ++j) {
      EXPECT_EQ(at(5, j), at(2, j)) << "isa " << int(isa) << " column " << j;
      EXPECT_EQ(at(9, j), at(12, j)) << "isa " << int(isa) << " column " << j;
    }
  }
}

TEST(GramKernel, DispatchDependsOnDimensionAndDtypeOnly) {
  ModeGuard guard(gram::Mode::automatic);
  const gram::Isa isa = gram::kernel_isa();
  for (std::size_t d : {1, 5, 17, 33, 65, 91, 129, 257, 1000}) {
    EXPECT_EQ(gram::use_kernel<double>(d), d <= gram::crossover<double>(isa)) << d;
    EXPECT_EQ(gram::use_kernel<float>(d), d <= gram::crossover<float>(isa)) << d;
  }
  gram::set_mode(gram::Mode::library);
  EXPECT_FALSE(gram::use_kernel<double>(5));
  gram::set_mode(gram::Mode::scalar);
  EXPECT_TRUE(gram::use_kernel<float>(500));
  EXPECT_EQ(gram::kernel_isa(), gram::Isa::scalar);
}

// --- the engine with the kernel ------------------------------------------------------------------

template <class T>
struct Fit {
  rh::State<T> state;
  rh::Diagnostics diagnostics;
};

template <class T>
Fit<T> fit(std::size_t threads, const rh::test::Batch<T>& first, const rh::test::Batch<T>& second,
           rh::cpu::GramStrategy strategy, double lambda) {
  rh::cpu::Engine engine({.threads = threads, .gram = strategy});
  rh::Config config;
  config.alpha = lambda;
  config.l1_solver = rh::L1Solver::prox_newton;  // uses the Gram (LAMM does not)
  const std::size_t dim = first.features + 1;
  auto [s1, d1] = engine.update(rh::State<T>::empty(dim), first.design(), first.response(),
                                first.weights(), config);
  auto [s2, d2] = engine.update(s1, second.design(), second.response(), second.weights(), config);
  return {std::move(s2), d2};
}

template <class T>
void expect_thread_invariant(gram::Mode mode, std::size_t features, double lambda) {
  ModeGuard guard(mode);
  // 9,000 rows: 4 row blocks, run on the pool (BatchOps::min_parallel_entries).
  const auto first = rh::test::contaminated_batch<T>(61 + features, 9000, features);
  const auto second = rh::test::contaminated_batch<T>(62 + features, 9000, features, 0.2);
  for (auto strategy : {rh::cpu::GramStrategy::incremental, rh::cpu::GramStrategy::full}) {
    const Fit<T> one = fit(1, first, second, strategy, lambda);
    for (std::size_t threads : {2, 3}) {
      const Fit<T> many = fit(threads, first, second, strategy, lambda);
      EXPECT_EQ(one.state.coef, many.state.coef) << threads << " threads, d " << features + 1;
      EXPECT_EQ(one.state.information, many.state.information) << threads << " threads";
      EXPECT_EQ(one.diagnostics.objective, many.diagnostics.objective);
      EXPECT_EQ(one.diagnostics.n_iter, many.diagnostics.n_iter);
    }
  }
}

TEST(GramKernelEngine, BitwiseAcrossThreadCountsWithTheKernel) {
  ASSERT_TRUE(gram::use_kernel<double>(17) || gram::mode() != gram::Mode::automatic);
  for (gram::Mode mode : {gram::Mode::automatic, gram::Mode::scalar}) {
    expect_thread_invariant<double>(mode, 16, 0.0);
    expect_thread_invariant<float>(mode, 16, 0.0);
    expect_thread_invariant<double>(mode, 32, 0.01);
  }
}

template <class T>
void expect_close_to_library(std::size_t features, double rtol) {
  const auto first = rh::test::contaminated_batch<T>(71, 5000, features);
  const auto second = rh::test::contaminated_batch<T>(72, 5000, features);
  Fit<T> library, kernel;
  {
    ModeGuard guard(gram::Mode::library);
    library = fit(2, first, second, rh::cpu::GramStrategy::incremental, 0.0);
  }
  for (gram::Mode mode : {gram::Mode::avx2, gram::Mode::avx512, gram::Mode::scalar}) {
    ModeGuard guard(mode);
    kernel = fit(2, first, second, rh::cpu::GramStrategy::incremental, 0.0);
    ASSERT_EQ(kernel.state.coef.size(), library.state.coef.size());
    for (std::size_t j = 0; j < kernel.state.coef.size(); ++j) {
      EXPECT_NEAR(kernel.state.coef[j], library.state.coef[j],
                  rtol * std::max<double>(1.0, std::fabs(library.state.coef[j])));
    }
    for (std::size_t k = 0; k < kernel.state.information.size(); ++k) {
      EXPECT_NEAR(kernel.state.information[k], library.state.information[k],
                  rtol * std::max<double>(1.0, std::fabs(library.state.information[k])));
    }
  }
}

TEST(GramKernelEngine, AgreesWithTheLibraryPath) {
  expect_close_to_library<double>(16, 1e-9);
  expect_close_to_library<float>(16, 2e-3);
  expect_close_to_library<double>(90, 1e-9);
}

}  // namespace
