// The engine's BLAS and LAPACKE names for the PyPI wheel scipy-openblas32 (RH_BLAS=scipy-openblas32).
//
// That library exports, and its cblas.h and lapacke.h declare, every function with a scipy_
// prefix (scipy_cblas_dgemv, scipy_LAPACKE_dpotrf_work, scipy_openblas_set_num_threads), so that
// it cannot clash with another BLAS in the same process. The engine is written against the usual
// names, as the system OpenBLAS has them. RhBlas.cmake force-includes this file (-include) into
// every C++ source that uses rh::blas, so those sources (native/cpu/blas.hpp and engine.cpp,
// native/cuda/host_condition.cpp, the benchmarks) compile unchanged against either library.
//
// A name missing here fails to compile (the prefixed headers declare no unprefixed one), so the
// build can never quietly call another BLAS: add the name when a source starts using it.
#pragma once

// Level-2/3 BLAS (native/cpu/blas.hpp).
#define cblas_sgemv scipy_cblas_sgemv
#define cblas_dgemv scipy_cblas_dgemv
#define cblas_ssyrk scipy_cblas_ssyrk
#define cblas_dsyrk scipy_cblas_dsyrk
#define cblas_sgemm scipy_cblas_sgemm
#define cblas_dgemm scipy_cblas_dgemm

// LAPACKE (native/cpu/blas.hpp, native/cuda/host_condition.cpp).
#define LAPACKE_spotrf_work scipy_LAPACKE_spotrf_work
#define LAPACKE_dpotrf_work scipy_LAPACKE_dpotrf_work
#define LAPACKE_spocon_work scipy_LAPACKE_spocon_work
#define LAPACKE_dpocon_work scipy_LAPACKE_dpocon_work
#define LAPACKE_spotrs_work scipy_LAPACKE_spotrs_work
#define LAPACKE_dpotrs_work scipy_LAPACKE_dpotrs_work
#define LAPACKE_sgetrf_work scipy_LAPACKE_sgetrf_work
#define LAPACKE_dgetrf_work scipy_LAPACKE_dgetrf_work
#define LAPACKE_sgecon_work scipy_LAPACKE_sgecon_work
#define LAPACKE_dgecon_work scipy_LAPACKE_dgecon_work
#define LAPACKE_sgetrs_work scipy_LAPACKE_sgetrs_work
#define LAPACKE_dgetrs_work scipy_LAPACKE_dgetrs_work
#define LAPACKE_sgelsd_work scipy_LAPACKE_sgelsd_work
#define LAPACKE_dgelsd_work scipy_LAPACKE_dgelsd_work
#define LAPACKE_stpqrt_work scipy_LAPACKE_stpqrt_work
#define LAPACKE_dtpqrt_work scipy_LAPACKE_dtpqrt_work
#define LAPACKE_strcon_work scipy_LAPACKE_strcon_work
#define LAPACKE_dtrcon_work scipy_LAPACKE_dtrcon_work
#define LAPACKE_strtrs_work scipy_LAPACKE_strtrs_work
#define LAPACKE_dtrtrs_work scipy_LAPACKE_dtrtrs_work
#define LAPACKE_sgesvd_work scipy_LAPACKE_sgesvd_work
#define LAPACKE_dgesvd_work scipy_LAPACKE_dgesvd_work

// OpenBLAS's own extensions (native/cpu/engine.cpp, native/bench/bench_gram_kernel.cpp).
#define openblas_set_num_threads scipy_openblas_set_num_threads
#define openblas_get_num_threads scipy_openblas_get_num_threads
#define openblas_get_config scipy_openblas_get_config
