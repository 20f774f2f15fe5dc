# invmw_add_design(FILE [LABELS l...] [FRESH] [DB file] [DEPENDS target...])
#
# Turns a design file into CTest tests: <design>.p<K>.r<R> per point and replication, and the
# after-step <design>.summary (plus <design>.reset with FRESH); see `invmw design ctest --help`.
#
# Why at build time: the points are known only after the design file has been parsed, and the
# one parser that knows the format is invmw's own (the same that runs the points). So the build
# runs `invmw design ctest` into a script, and CTest includes it through TEST_INCLUDE_FILES,
# the mechanism gtest_discover_tests uses. Before the build the design shows up as one failing
# test <stem>.NOT_BUILT that says what to build.
#
# LABELS are added to every test of the design (its name and `factorial` always are); pass
# `slow` for full designs so the default test command skips them. DB defaults to
# <build>/experiments/results.db, the runner's own default. DEPENDS: targets the runs need
# (the program of the command template, the preload library); they become dependencies of
# the generated script, so `cmake --build` builds them.
function(invmw_add_design file)
  cmake_parse_arguments(D "FRESH" "DB" "LABELS;DEPENDS" ${ARGN})
  get_filename_component(file "${file}" ABSOLUTE)
  get_filename_component(stem "${file}" NAME_WE)
  if(NOT D_DB)
    set(D_DB ${CMAKE_BINARY_DIR}/experiments/results.db)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/designs)
  set(script ${dir}/${stem}_tests.cmake)
  set(extra "")
  if(D_FRESH)
    list(APPEND extra --fresh)
  endif()
  list(JOIN D_LABELS "," labels)
  add_custom_command(OUTPUT ${script}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND invmw design ctest ${file} --db ${D_DB} --labels "${labels}" ${extra}
            --output ${script}
    DEPENDS invmw ${file}
    COMMENT "CTest tests of design ${stem}"
    VERBATIM)
  add_custom_target(invmw_design_${stem} ALL DEPENDS ${script})
  if(D_DEPENDS)
    add_dependencies(invmw_design_${stem} ${D_DEPENDS})
  endif()
  set(wrapper ${dir}/${stem}_include.cmake)
  file(WRITE ${wrapper}
    "if(EXISTS [==[${script}]==])\n"
    "  include([==[${script}]==])\n"
    "else()\n"
    "  add_test(${stem}.NOT_BUILT [==[${CMAKE_COMMAND}]==] -E echo\n"
    "           \"design ${stem}: build target invmw_design_${stem} first\")\n"
    "  set_tests_properties(${stem}.NOT_BUILT PROPERTIES WILL_FAIL TRUE LABELS [==[${labels}]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${wrapper})
endfunction()
