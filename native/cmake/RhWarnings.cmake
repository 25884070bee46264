# rh_warnings(target): the project's warning set, as errors when RH_WERROR is on (CI).
function(rh_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  if(RH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
