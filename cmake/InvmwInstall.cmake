# Install rules and the CMake package config, so other projects can find_package(invmw).
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/invmwConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/invmwConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/invmwConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/invmw
                              PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
install(FILES ${CMAKE_BINARY_DIR}/invmwConfig.cmake ${CMAKE_BINARY_DIR}/invmwConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/invmw)
