# Sanitizer builds: -DINVMW_SANITIZE=address (ASan + UBSan) or -DINVMW_SANITIZE=thread (TSan),
# applied to everything invmw builds (libraries, the preload libraries, tools, tests, test
# programs). Include before the parts are added.
#
# A sanitized libinvmw.so preloaded into an uninstrumented program (mpirun's ranks) only works
# when the sanitizer runtime is the first library of the process, ahead of libinvmw.so: the
# runtime's paths are asked from the compiler here and recorded, for `invmw run`
# (invmw_sanitize.h) and for the test harnesses (INVMW_SANITIZER_PRELOAD).
#
# Defines:
#   INVMW_SANITIZER_PRELOAD    colon-separated runtimes to put first in LD_PRELOAD ("" if none)
#   INVMW_SANITIZER_TEST_ENV   list of VAR=VALUE for tests that run MPI programs (sanitizer
#                              options and the suppression files of ctest/sanitizers/)
#   generated/invmw_sanitize.h INVMW_SANITIZE_KIND, INVMW_SANITIZER_PRELOAD,
#                              INVMW_SANITIZER_LSAN_SUPP, INVMW_SANITIZER_TSAN_SUPP

set(INVMW_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE INVMW_SANITIZE PROPERTY STRINGS "" address thread)

set(INVMW_SANITIZER_PRELOAD "")
set(INVMW_SANITIZER_TEST_ENV "")
set(_supp_dir ${CMAKE_CURRENT_SOURCE_DIR}/ctest/sanitizers)
set(INVMW_SANITIZER_LSAN_SUPP "")
set(INVMW_SANITIZER_TSAN_SUPP "")

if(INVMW_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
    # Clang links its ASan runtime statically into executables, which a preloaded shared library
    # cannot share; the preload layout below is GCC's (shared libasan, libubsan, libtsan).
    message(FATAL_ERROR "INVMW_SANITIZE=${INVMW_SANITIZE} needs GCC (C and C++); the compilers "
                        "are ${CMAKE_C_COMPILER_ID} and ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(INVMW_SANITIZE STREQUAL "address")
    set(_flags -fsanitize=address,undefined -fno-sanitize-recover=all)
    set(_runtimes libasan.so libubsan.so)
  elseif(INVMW_SANITIZE STREQUAL "thread")
    set(_flags -fsanitize=thread)
    set(_runtimes libtsan.so)
  else()
    message(FATAL_ERROR "INVMW_SANITIZE=${INVMW_SANITIZE}: expected address, thread or empty")
  endif()
  # Frame pointers make the sanitizers' fast unwinder give whole stacks, which the suppressions
  # and the reports need.
  add_compile_options(${_flags} -fno-omit-frame-pointer)
  add_link_options(${_flags})

  set(_paths "")
  foreach(rt IN LISTS _runtimes)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${rt} OUTPUT_VARIABLE p
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    # Without the runtime the compiler echoes the bare name back.
    if(NOT rc EQUAL 0 OR NOT IS_ABSOLUTE "${p}" OR NOT EXISTS "${p}")
      message(FATAL_ERROR "INVMW_SANITIZE=${INVMW_SANITIZE}: ${CMAKE_CXX_COMPILER} "
                          "-print-file-name=${rt} found no runtime (got '${p}')")
    endif()
    file(REAL_PATH "${p}" p)
    list(APPEND _paths "${p}")
  endforeach()
  list(JOIN _paths ":" INVMW_SANITIZER_PRELOAD)
  message(STATUS "Sanitizer build (${INVMW_SANITIZE}); preloaded runs start with "
                 "${INVMW_SANITIZER_PRELOAD}")

  if(INVMW_SANITIZE STREQUAL "address")
    set(INVMW_SANITIZER_LSAN_SUPP ${_supp_dir}/lsan.supp)
    # detect_leaks: at each rank's exit; the MPI libraries' own leaks are suppressed by the
    # file, leaks in invmw's code stay errors (exit status 23, so a rank with a leak fails).
    list(APPEND INVMW_SANITIZER_TEST_ENV
         "ASAN_OPTIONS=detect_leaks=1:exitcode=23"
         "LSAN_OPTIONS=suppressions=${INVMW_SANITIZER_LSAN_SUPP}:print_suppressions=0"
         "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  else()
    set(INVMW_SANITIZER_TSAN_SUPP ${_supp_dir}/tsan.supp)
    list(APPEND INVMW_SANITIZER_TEST_ENV
         "TSAN_OPTIONS=suppressions=${INVMW_SANITIZER_TSAN_SUPP}:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0")
  endif()
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/invmw_sanitize.h.in
               ${CMAKE_BINARY_DIR}/generated/invmw_sanitize.h @ONLY)

# invmw_sanitizer_test_env(TEST...): the sanitizer options for tests that run MPI programs.
function(invmw_sanitizer_test_env)
  if(INVMW_SANITIZER_TEST_ENV)
    set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT ${INVMW_SANITIZER_TEST_ENV})
  endif()
endfunction()

function(_invmw_directory_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s IN LISTS subdirs)
    _invmw_directory_targets(${s} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# invmw_add_sanitize_target(): the target invmw_sanitize_tests builds what the sanitizer stage of
# CI runs (ctest -L 'unit|sanitize', scripts/test-sanitize.sh) and nothing else: every unit-test
# program (executables named *_test), the command, the preload library, the test helpers below
# and the programs of the MPI tests labelled `sanitize` (ctest/CMakeLists.txt). Call it last.
function(invmw_add_sanitize_target)
  _invmw_directory_targets(${CMAKE_SOURCE_DIR} all)
  set(deps invmw invmw_preload
      # Helpers that unit tests run.
      sampler_testapp sampler_trace_run otf2_make_synthetic_run fit_make_results_db
      # Programs of the MPI tests labelled `sanitize`.
      e2e_openmpi_c_p2p e2e_openmpi_c_nonblocking e2e_openmpi_c_collectives e2e_openmpi_f_mpif
      e2e_openmpi_c_threads e2e_openmpi_c_abnormal sanitize_leak_check)
  foreach(t IN LISTS all)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE" AND t MATCHES "_test$")
      list(APPEND deps ${t})
    endif()
  endforeach()
  add_custom_target(invmw_sanitize_tests)
  foreach(t IN LISTS deps)
    if(TARGET ${t})
      add_dependencies(invmw_sanitize_tests ${t})
    endif()
  endforeach()
endfunction()
