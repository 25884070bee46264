# Defines rh::blas: the system OpenBLAS (CBLAS, and openblas_set_num_threads) plus LAPACKE.
# Installed next to rhConfig.cmake so that consumers of the exported targets resolve the same
# libraries.
if(TARGET rh::blas)
  return()
endif()

find_path(RH_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread)
find_path(RH_LAPACKE_INCLUDE_DIR lapacke.h PATH_SUFFIXES openblas lapacke)
find_library(RH_OPENBLAS_LIBRARY NAMES openblas)
find_library(RH_LAPACKE_LIBRARY NAMES lapacke)

foreach(var RH_CBLAS_INCLUDE_DIR RH_LAPACKE_INCLUDE_DIR RH_OPENBLAS_LIBRARY RH_LAPACKE_LIBRARY)
  if(NOT ${var})
    message(FATAL_ERROR "${var} not found: install OpenBLAS and LAPACKE "
                        "(Debian: apt-get install libopenblas-dev liblapacke-dev)")
  endif()
endforeach()

add_library(rh::blas INTERFACE IMPORTED)
target_include_directories(rh::blas INTERFACE ${RH_CBLAS_INCLUDE_DIR} ${RH_LAPACKE_INCLUDE_DIR})
target_link_libraries(rh::blas INTERFACE ${RH_LAPACKE_LIBRARY} ${RH_OPENBLAS_LIBRARY})
