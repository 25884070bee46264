# Defines rh::blas: the OpenBLAS (CBLAS, and openblas_set_num_threads) plus LAPACKE the engine
# links. Installed next to rhConfig.cmake so that consumers of the exported targets resolve the
# same libraries.
#
# RH_BLAS chooses which:
#   system            the system's OpenBLAS and LAPACKE (Debian: libopenblas-dev liblapacke-dev);
#                     the C++ library, its tests and the installed CMake package
#   scipy-openblas32  the PyPI wheel scipy-openblas32 (what NumPy and SciPy ship), found through
#                     the Python interpreter; the Python wheels (python-cpu/, python-cuda/), which
#                     depend on it at run time instead of bundling a BLAS. It recognises newer
#                     CPUs than a distribution's older OpenBLAS (docs/install.md, "BLAS").
if(TARGET rh::blas)
  return()
endif()

set(RH_BLAS "system" CACHE STRING "BLAS/LAPACK of the engine: system or scipy-openblas32")
set_property(CACHE RH_BLAS PROPERTY STRINGS system scipy-openblas32)

add_library(rh::blas INTERFACE IMPORTED)

if(RH_BLAS STREQUAL "system")
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

  target_include_directories(rh::blas INTERFACE ${RH_CBLAS_INCLUDE_DIR} ${RH_LAPACKE_INCLUDE_DIR})
  target_link_libraries(rh::blas INTERFACE ${RH_LAPACKE_LIBRARY} ${RH_OPENBLAS_LIBRARY})

elseif(RH_BLAS STREQUAL "scipy-openblas32")
  # The interpreter scikit-build-core builds with (it passes Python_EXECUTABLE), whose environment
  # has scipy-openblas32 from [build-system].requires (or the venv's, without build isolation).
  find_package(Python 3.11 REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c
            "import scipy_openblas32 as s; print(s.get_include_dir()); print(s.get_lib_dir()); print(s.get_library(fullname=True)); print(s.__version__)"
    OUTPUT_VARIABLE rh_sob OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rh_sob_result ERROR_VARIABLE rh_sob_error)
  if(NOT rh_sob_result EQUAL 0)
    message(FATAL_ERROR "RH_BLAS=scipy-openblas32: ${Python_EXECUTABLE} cannot import "
                        "scipy_openblas32 (pip install scipy-openblas32): ${rh_sob_error}")
  endif()
  string(REPLACE "\n" ";" rh_sob "${rh_sob}")
  list(GET rh_sob 0 RH_SCIPY_OPENBLAS_INCLUDE_DIR)
  list(GET rh_sob 1 RH_SCIPY_OPENBLAS_LIB_DIR)
  list(GET rh_sob 2 rh_sob_file)
  list(GET rh_sob 3 rh_sob_version)
  message(STATUS "BLAS: scipy-openblas32 ${rh_sob_version} (${RH_SCIPY_OPENBLAS_LIB_DIR})")

  target_include_directories(rh::blas INTERFACE ${RH_SCIPY_OPENBLAS_INCLUDE_DIR})
  # Linked by its full path: the binary then records only the soname (libscipy_openblas.so),
  # which the module finds at run time through RH_BLAS_INSTALL_RPATH below, never through this
  # directory (a temporary environment under build isolation).
  target_link_libraries(rh::blas INTERFACE ${RH_SCIPY_OPENBLAS_LIB_DIR}/${rh_sob_file})
  # The library's symbols carry a scipy_ prefix; this header gives the engine's calls those
  # names without changing the sources (it says why, and lists them).
  target_compile_options(rh::blas INTERFACE
    "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${CMAKE_CURRENT_LIST_DIR}/rh_scipy_openblas_names.h>")

else()
  message(FATAL_ERROR "RH_BLAS must be system or scipy-openblas32, not '${RH_BLAS}'")
endif()

# The run path a Python module (or librh_cuda beside it) adds to find the BLAS: the wheel
# scipy-openblas32 installs site-packages/scipy_openblas32/lib/, next to our modules at the root
# of site-packages. Empty for the system BLAS, which the loader finds by itself.
if(RH_BLAS STREQUAL "scipy-openblas32")
  set(RH_BLAS_INSTALL_RPATH "$ORIGIN/scipy_openblas32/lib")
else()
  set(RH_BLAS_INSTALL_RPATH "")
endif()
