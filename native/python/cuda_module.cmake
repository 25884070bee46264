# The nanobind module _rhuber_native_cuda, a thin Python face of the C ABI (cuda_module.cpp),
# included by native/cuda/CMakeLists.txt when it builds the Python module, and installed
# (component "python") at the root of the wheel that python-cuda/pyproject.toml builds, next to
# librh_cuda, which it finds through its $ORIGIN run path.
find_package(Python 3.11 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                OUTPUT_VARIABLE nanobind_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
find_package(nanobind CONFIG REQUIRED)

nanobind_add_module(_rhuber_native_cuda NB_STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda_module.cpp)
# config.hpp, the config parser shared with the CPU module, and the core headers it reads into.
target_include_directories(_rhuber_native_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                           ${CMAKE_CURRENT_LIST_DIR}/../include)
target_link_libraries(_rhuber_native_cuda PRIVATE rh_cuda)
target_compile_definitions(_rhuber_native_cuda PRIVATE RH_VERSION="${RH_VERSION_STRING}")
# No -Wshadow: nanobind's own headers trip it.
target_compile_options(_rhuber_native_cuda PRIVATE -Wall -Wextra
                       $<$<BOOL:${RH_WERROR}>:-Werror>)
# The CUDA libraries are not bundled. In a wheel they come from NVIDIA's PyPI wheels, which put
# them in site-packages/nvidia/cu<major>/lib, beside this module: the run path names that
# directory relative to the module, so an installed wheel works wherever it is. A development
# build (RH_CUDA_TOOLKIT_RPATH=ON, scripts/build_native_cuda.sh) also names the toolkit's own
# directory, after it; scripts/dist.sh turns that off, since it is a path of the build machine.
option(RH_CUDA_TOOLKIT_RPATH "Also search the build machine's CUDA toolkit at run time" ON)
set(rh_cuda_rpath "$ORIGIN;$ORIGIN/nvidia/cu${CUDAToolkit_VERSION_MAJOR}/lib")
# librh_cuda's LAPACKE: the wheel scipy-openblas32 beside it, when built with it (RhBlas.cmake).
list(APPEND rh_cuda_rpath ${RH_BLAS_INSTALL_RPATH})
if(RH_CUDA_TOOLKIT_RPATH)
  list(APPEND rh_cuda_rpath "${CUDAToolkit_LIBRARY_DIR}")
endif()
set_target_properties(_rhuber_native_cuda PROPERTIES INSTALL_RPATH "${rh_cuda_rpath}")
set_target_properties(rh_cuda PROPERTIES INSTALL_RPATH "${rh_cuda_rpath}")
install(TARGETS _rhuber_native_cuda rh_cuda LIBRARY DESTINATION . COMPONENT python
        NAMELINK_SKIP)
