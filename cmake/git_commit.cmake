# Writes OUT (a header defining PARASURF_GIT_COMMIT) from the source tree's HEAD, with "-dirty" when tracked files
# differ from it, at every build (not at configure time); the file is rewritten only when the text changes, so that
# what includes it recompiles only then. PARASURF_COMMIT in the environment names it instead (a copy of the tree
# whose git metadata is not its own: a source archive, a build machine fed a working tree).
if(NOT "$ENV{PARASURF_COMMIT}" STREQUAL "")
  set(text "#pragma once\n#define PARASURF_GIT_COMMIT \"$ENV{PARASURF_COMMIT}\"\n")
  if(EXISTS "${OUT}")
    file(READ "${OUT}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${OUT}" "${text}")
  return()
endif()
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY "${SRC}"
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "#pragma once\n#define PARASURF_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
