# Installs the library into a scratch prefix, configures native/examples against it with
# find_package(rh), builds it and runs stream_fit. Any failing step fails the test.
function(run_step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "step failed (${status}): ${ARGV}")
  endif()
endfunction()

file(REMOVE_RECURSE ${RH_WORK_DIR})
run_step(${CMAKE_COMMAND} --install ${RH_BINARY_DIR} --prefix ${RH_WORK_DIR}/prefix
         --component devel)
run_step(${CMAKE_COMMAND} -S ${RH_EXAMPLES_DIR} -B ${RH_WORK_DIR}/build
         -DCMAKE_PREFIX_PATH=${RH_WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND} --build ${RH_WORK_DIR}/build)
run_step(${RH_WORK_DIR}/build/stream_fit 5 1000 4)
