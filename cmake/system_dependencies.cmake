# find_package with a message that names the Debian package to install, instead of CMake's search report.
macro(parasurf_require_package name debian)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "parasurf needs ${name}, which was not found. On Debian or Ubuntu: "
                        "sudo apt-get install ${debian} (scripts/deps.sh installs everything the build uses).")
  endif()
endmacro()
