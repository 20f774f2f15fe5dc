# MPI flavours. invmw builds its preload library against each MPI installed (OpenMPI is the
# default and gives libinvmw.so; MPICH gives libinvmw-mpich.so), taking compile and link flags
# from each MPI's own compiler wrappers, named explicitly (mpicc.openmpi, mpicc.mpich) because
# installing both MPIs can move the plain `mpicc` alternative.
#
# For each flavour F found this defines:
#   invmw::mpi_c_F, invmw::mpi_fortran_F   INTERFACE IMPORTED targets (flags of mpicc/mpifort)
#   INVMW_MPI_F_HEADER                     path of its mpi.h (input of the wrapper generator)
#   INVMW_MPI_F_LAUNCHER                   its mpirun
# and INVMW_MPI_FLAVORS, the list of flavours found, the default first.

set(INVMW_MPI "openmpi" CACHE STRING "MPI that libinvmw.so is built for (openmpi or mpich)")
option(INVMW_WITH_SECOND_MPI "Also build the preload library for the other MPI when installed" ON)

function(_invmw_wrapper_flags wrapper showflag out_includes out_compile out_link out_dirs out_libs)
  execute_process(COMMAND ${wrapper} ${showflag} OUTPUT_VARIABLE line RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${wrapper} ${showflag} failed")
  endif()
  separate_arguments(args UNIX_COMMAND "${line}")
  list(POP_FRONT args)  # the underlying compiler
  set(inc "")
  set(comp "")
  set(link "")
  set(dirs "")
  set(libs "")
  foreach(a IN LISTS args)
    if(a MATCHES "^-I(.*)")
      list(APPEND inc "${CMAKE_MATCH_1}")
    elseif(a MATCHES "^-L(.*)")
      list(APPEND dirs "${CMAKE_MATCH_1}")
    elseif(a MATCHES "^-l(.*)")
      # Libraries must follow the objects on the link line (--as-needed drops them otherwise).
      list(APPEND libs "${CMAKE_MATCH_1}")
    elseif(a MATCHES "^-Wl," OR a STREQUAL "-pthread")
      list(APPEND link "${a}")
    elseif(a MATCHES "^-f(allow|no-)" )
      list(APPEND comp "${a}")
    endif()
  endforeach()
  set(${out_includes} "${inc}" PARENT_SCOPE)
  set(${out_compile} "${comp}" PARENT_SCOPE)
  set(${out_link} "${link}" PARENT_SCOPE)
  set(${out_dirs} "${dirs}" PARENT_SCOPE)
  set(${out_libs} "${libs}" PARENT_SCOPE)
endfunction()

function(_invmw_add_flavor flavor cc fc showflag launcher)
  find_program(_cc NAMES ${cc} NO_CACHE)
  find_program(_fc NAMES ${fc} NO_CACHE)
  find_program(_run NAMES ${launcher} NO_CACHE)
  if(NOT _cc OR NOT _run)
    set(INVMW_HAVE_${flavor} FALSE PARENT_SCOPE)
    return()
  endif()
  _invmw_wrapper_flags(${_cc} ${showflag} inc comp link dirs libs)
  add_library(invmw::mpi_c_${flavor} INTERFACE IMPORTED GLOBAL)
  # The C++ bindings would drag libmpi_cxx in; invmw uses the C API from C++.
  set_target_properties(invmw::mpi_c_${flavor} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${inc}"
                        INTERFACE_COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1"
                        INTERFACE_LINK_OPTIONS "${link}" INTERFACE_LINK_DIRECTORIES "${dirs}"
                        INTERFACE_LINK_LIBRARIES "${libs}")
  set(header "")
  foreach(d IN LISTS inc)
    if(NOT header AND EXISTS "${d}/mpi.h")
      set(header "${d}/mpi.h")
    endif()
  endforeach()
  if(_fc)
    _invmw_wrapper_flags(${_fc} ${showflag} finc fcomp flink fdirs flibs)
    add_library(invmw::mpi_fortran_${flavor} INTERFACE IMPORTED GLOBAL)
    set_target_properties(invmw::mpi_fortran_${flavor} PROPERTIES
                          INTERFACE_INCLUDE_DIRECTORIES "${finc}"
                          INTERFACE_COMPILE_OPTIONS "${fcomp}" INTERFACE_LINK_OPTIONS "${flink}"
                          INTERFACE_LINK_DIRECTORIES "${fdirs}" INTERFACE_LINK_LIBRARIES "${flibs}")
  endif()
  set(INVMW_HAVE_${flavor} TRUE PARENT_SCOPE)
  set(INVMW_MPI_${flavor}_HEADER "${header}" PARENT_SCOPE)
  set(INVMW_MPI_${flavor}_LAUNCHER "${_run}" PARENT_SCOPE)
  set(INVMW_MPI_${flavor}_CC "${_cc}" PARENT_SCOPE)
  message(STATUS "invmw: ${flavor}: ${_cc}, ${header}, launcher ${_run}")
endfunction()

_invmw_add_flavor(openmpi mpicc.openmpi mpifort.openmpi -showme mpirun.openmpi)
_invmw_add_flavor(mpich mpicc.mpich mpifort.mpich -show mpirun.mpich)

set(INVMW_MPI_FLAVORS "")
if(NOT INVMW_HAVE_${INVMW_MPI})
  message(FATAL_ERROR "invmw: INVMW_MPI=${INVMW_MPI} but its compiler wrappers were not found; "
                      "run scripts/setup.sh")
endif()
list(APPEND INVMW_MPI_FLAVORS ${INVMW_MPI})
if(INVMW_WITH_SECOND_MPI)
  foreach(f openmpi mpich)
    if(NOT f STREQUAL INVMW_MPI AND INVMW_HAVE_${f})
      list(APPEND INVMW_MPI_FLAVORS ${f})
    endif()
  endforeach()
endif()
message(STATUS "invmw: preload library flavours: ${INVMW_MPI_FLAVORS}")
