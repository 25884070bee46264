# The one version of all three distributions (rhuber, -native-cpu, -native-cuda) is
# python/rhuber/_version.py; the pyproject files read it too (hatch / scikit-build-core
# regex providers). Sets RH_VERSION_STRING (the full PEP 440 string, what the modules report) and
# RH_VERSION_NUMERIC (its leading X.Y.Z, what project(VERSION) accepts).
set(_rh_version_file "${CMAKE_CURRENT_LIST_DIR}/../../python/rhuber/_version.py")
if(NOT EXISTS "${_rh_version_file}")
  message(FATAL_ERROR "the version file ${_rh_version_file} is missing: native/ must sit beside "
                      "python/rhuber/ (as in the repository and in the native sdists)")
endif()
file(STRINGS "${_rh_version_file}" _rh_version_line REGEX "^__version__ *= *\"[^\"]+\"")
if(NOT _rh_version_line MATCHES "\"([^\"]+)\"")
  message(FATAL_ERROR "no __version__ = \"...\" line in ${_rh_version_file}")
endif()
set(RH_VERSION_STRING "${CMAKE_MATCH_1}")
if(NOT RH_VERSION_STRING MATCHES "^([0-9]+\\.[0-9]+\\.[0-9]+)")
  message(FATAL_ERROR "__version__ '${RH_VERSION_STRING}' does not start with X.Y.Z")
endif()
set(RH_VERSION_NUMERIC "${CMAKE_MATCH_1}")
