# The default CUDA architectures: a cubin for each GPU generation since Turing that the toolkit can target, and
# PTX of the newest for GPUs that came later. nvcc is asked what it supports, so an older toolkit builds what it
# can instead of failing.
function(parasurf_default_cuda_architectures out)
  set(wanted 75 80 86 89 90 100 110 120)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch
                  OUTPUT_VARIABLE listed ERROR_QUIET RESULT_VARIABLE rc)
  set(archs "")
  set(newest "")
  foreach(a IN LISTS wanted)
    if(rc EQUAL 0 AND NOT listed MATCHES "compute_${a}([^0-9]|$)")
      continue()
    endif()
    list(APPEND archs "${a}-real")
    set(newest ${a})
  endforeach()
  if(NOT newest)
    set(${out} "native" PARENT_SCOPE)
    return()
  endif()
  list(APPEND archs "${newest}-virtual")
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()
